//go:build !noasm

package roofline

const haveKernels = true

func readSweep(p *byte, n int) uint64

func fmaLoop(iters int, x, y float32) float32

func vnniLoop(iters int, u, s uint32) int32

func amxInt8Loop(cfg *byte, a *int8, b *int8, c *int32, iters int)

func amxBF16Loop(cfg *byte, a *uint16, b *uint16, c *float32, iters int)

func readSweepPf(p *byte, n, dist int) uint64

func readSweepPf1(p *byte, n, dist int) uint64

func readSweep2(p, q *byte, n int) uint64
