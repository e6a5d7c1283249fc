//go:build !amd64 || noasm

package roofline

// haveKernels is false: the probes need the amd64 assembly and report
// themselves unavailable in this build.
const haveKernels = false

func readSweep(p *byte, n int) uint64 { panic("roofline: no kernels in this build") }

func fmaLoop(iters int, x, y float32) float32 { panic("roofline: no kernels in this build") }

func vnniLoop(iters int, u, s uint32) int32 { panic("roofline: no kernels in this build") }

func amxInt8Loop(cfg *byte, a *int8, b *int8, c *int32, iters int) {
	panic("roofline: no kernels in this build")
}

func amxBF16Loop(cfg *byte, a *uint16, b *uint16, c *float32, iters int) {
	panic("roofline: no kernels in this build")
}

func readSweepPf(p *byte, n, dist int) uint64 { panic("roofline: no kernels in this build") }

func readSweepPf1(p *byte, n, dist int) uint64 { panic("roofline: no kernels in this build") }

func readSweep2(p, q *byte, n int) uint64 { panic("roofline: no kernels in this build") }
