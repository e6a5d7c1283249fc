package roofline

import (
	"time"

	"github.com/damascus-llm/damascus/internal/amx"
	"github.com/damascus-llm/damascus/internal/cpufeat"
)

// Operations per loop iteration of each kernel (a multiply-add counts 2).
const (
	fmaOpsPerIter  = 12 * 16 * 2                       // 12 VFMADD231PS × 16 fp32 lanes
	vnniOpsPerIter = 12 * 64 * 2                       // 12 VPDPBUSD × 64 u8·s8 products
	amxInt8PerIter = 4 * amx.M * amx.N * amx.KInt8 * 2 // 4 TDPBSSD of 16×64 · 64×16
	amxBF16PerIter = 4 * amx.M * amx.N * amx.KBF16 * 2 // 4 TDPBF16PS of 16×32 · 32×16
)

// computeProbe describes one peak-compute loop.
type computeProbe struct {
	name     string
	unit     string
	scale    float64 // PerSecond / scale = value in unit
	opsIter  float64
	requires []string
	amx      bool // needs the AMX tile permission
	// setup prepares per-thread state and returns the loop body.
	setup func(threads int) (run func(thread, iters int), err error)
}

// FP32FMA measures AVX-512 FP32 FMA throughput (GFLOP/s).
func FP32FMA(opt Options) []Measurement {
	return measureCompute(opt, computeProbe{
		name: ProbeFP32FMA, unit: "GFLOP/s", scale: 1e9, opsIter: fmaOpsPerIter, requires: []string{"avx512f"},
		setup: func(int) (func(int, int), error) {
			return func(_, iters int) { fmaLoop(iters, 0.5, 2) }, nil
		},
	})
}

// Int8VNNI measures AVX-512 VNNI VPDPBUSD throughput (int8 TOPS).
func Int8VNNI(opt Options) []Measurement {
	return measureCompute(opt, computeProbe{
		name: ProbeInt8VNNI, unit: "TOPS", scale: 1e12, opsIter: vnniOpsPerIter, requires: []string{"avx512f", "avx512vnni"},
		setup: func(int) (func(int, int), error) {
			return func(_, iters int) { vnniLoop(iters, 0x01010101, 0x01010101) }, nil
		},
	})
}

// AMXInt8 measures tile-resident TDPBSSD throughput (int8 TOPS).
func AMXInt8(opt Options) []Measurement {
	return measureCompute(opt, computeProbe{
		name: ProbeAMXInt8, unit: "TOPS", scale: 1e12, opsIter: amxInt8PerIter, requires: []string{"amx-int8"}, amx: true,
		setup: amxSetup(amxInt8Operands, amxInt8Loop),
	})
}

// AMXBF16 measures tile-resident TDPBF16PS throughput (TFLOP/s).
func AMXBF16(opt Options) []Measurement {
	return measureCompute(opt, computeProbe{
		name: ProbeAMXBF16, unit: "TFLOP/s", scale: 1e12, opsIter: amxBF16PerIter, requires: []string{"amx-bf16"}, amx: true,
		setup: amxSetup(amxBF16Operands, amxBF16Loop),
	})
}

// amxLoop is an AMX probe's kernel: iters rounds of the four products of
// two A and two B tiles (elements E) accumulated into four tiles of T.
type amxLoop[E, T any] func(cfg *byte, a, b *E, c *T, iters int)

// amxSetup is the setup of an AMX probe: its operands, shared by the
// threads, and a set of accumulator tiles for each thread.
func amxSetup[E, T any](operands func() (*amx.Config, []E, []E), loop amxLoop[E, T]) func(threads int) (func(int, int), error) {
	return func(threads int) (func(int, int), error) {
		cfg, a, b := operands()
		cs := make([][4 * amx.M * amx.N]T, threads)
		return func(t, iters int) { loop(&cfg[0], &a[0], &b[0], &cs[t][0], iters) }, nil
	}
}

// fullTiles is the tile configuration of both probes: all eight tiles at
// their largest (16 rows of 64 bytes).
func fullTiles() *amx.Config {
	cfg := amx.NewConfig()
	for t := 0; t < 8; t++ {
		cfg.SetTile(t, amx.MaxRows, amx.MaxRowBytes)
	}
	return cfg
}

// amxInt8Operands returns the tile configuration and two A and two B tiles
// (each 1 KiB) of small non-zero values.
func amxInt8Operands() (*amx.Config, []int8, []int8) {
	var a, b [2048]int8
	for i := range a {
		a[i] = int8(i%7 - 3)
		b[i] = int8(i%5 - 2)
	}
	return fullTiles(), a[:], b[:]
}

// amxBF16Operands is amxInt8Operands for bf16 tiles (values ±1, ±0.5, 0).
func amxBF16Operands() (*amx.Config, []uint16, []uint16) {
	vals := [...]uint16{0x3F80, 0xBF80, 0x3F00, 0xBF00, 0x0000} // 1, -1, 0.5, -0.5, 0
	var a, b [1024]uint16
	for i := range a {
		a[i] = vals[i%5]
		b[i] = vals[(i+2)%5]
	}
	return fullTiles(), a[:], b[:]
}

func measureCompute(opt Options, p computeProbe) []Measurement {
	opt = opt.withDefaults()
	out := make([]Measurement, len(opt.Threads))
	for i, t := range opt.Threads {
		out[i] = Measurement{Probe: p.name, Threads: t, Unit: p.unit}
	}
	skip := func(reason string) []Measurement {
		for i := range out {
			out[i].Skipped = reason
		}
		return out
	}
	if p.amx {
		// Name the precise reason (CPU, OS state or permission) first.
		if err := cpufeat.AMX(); err != nil {
			return skip(err.Error())
		}
	}
	if reason := needs(p.requires...); reason != "" {
		return skip(reason)
	}
	maxThreads := 0
	for _, t := range opt.Threads {
		maxThreads = max(maxThreads, t)
	}
	body, err := p.setup(maxThreads)
	if err != nil {
		return skip(err.Error())
	}
	run := chunked(body)
	iters := calibrate(run, opt.ComputeTime)
	for i, threads := range opt.Threads {
		rates := make([]float64, 0, opt.Repeats)
		parallel(threads, func(t int) { run(t, iters/8+1) }) // warm-up: clocks and tile state
		for r := 0; r < opt.Repeats; r++ {
			d := parallel(threads, func(t int) { run(t, iters) })
			rates = append(rates, float64(threads)*float64(iters)*p.opsIter/d.Seconds())
		}
		summarize(&out[i], rates, p.scale)
	}
	return out
}

// maxChunk bounds the iterations of one assembly call (about a millisecond or
// less) so a long probe never holds off the garbage collector's stop-the-world
// pauses: assembly loops are not preemptible.
const maxChunk = 1 << 16

func chunked(body func(thread, iters int)) func(thread, iters int) {
	return func(thread, iters int) {
		for iters > 0 {
			n := min(iters, maxChunk)
			body(thread, n)
			iters -= n
		}
	}
}

// calibrate finds an iteration count that runs for about target on one thread.
func calibrate(run func(thread, iters int), target time.Duration) int {
	iters := 1024
	for {
		d := parallel(1, func(t int) { run(t, iters) })
		if d >= target/4 || iters >= 1<<40 {
			scaled := float64(iters) * float64(target) / float64(max(d, time.Microsecond))
			return max(1, int(scaled))
		}
		iters *= 4
	}
}
