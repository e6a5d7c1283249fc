package roofline

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

// portMixFeatures are what every port-mix loop executes.
var portMixFeatures = []string{"avx512f", "avx512bw", "avx512vnni"}

// TestPortMixLoops runs every port-mix loop a few iterations (they must
// not fault; timing is the benchmark's) and checks the table: one
// baseline, then each operation at 12 and 24.
func TestPortMixLoops(t *testing.T) {
	p := portMixOperand(t)
	seen := map[string][]int{}
	for _, m := range portMixLoops {
		m.loop(3, p)
		m.loop(0, p)
		seen[m.op] = append(seen[m.op], m.n)
	}
	if fmt.Sprint(seen["none"]) != "[0]" || len(seen) < 10 {
		t.Fatalf("port-mix table %v", seen)
	}
	for op, ns := range seen {
		if op != "none" && fmt.Sprint(ns) != "[12 24]" {
			t.Errorf("%s: counts %v, want [12 24]", op, ns)
		}
	}
}

// BenchmarkPortMix times twelve VPDPBUSD an iteration beside n other
// operations (op=none: alone) and reports "slots": what one such operation
// adds to an iteration, in VPDPBUSD issue slots of the baseline (0: another
// port takes it for free; 1: it waits for the VPDPBUSD's port). Where a
// kernel of variants/ spends its time between dot products, this says
// which of its instructions cost on this CPU (session 27: on the AMD dev
// VM every multiply shares the one 512-bit multiply pipe, and other vector
// operations are free up to two a cycle in all).
func BenchmarkPortMix(b *testing.B) {
	p := portMixOperand(b)
	const iters = 4096
	perIter := func(loop func(int, *byte)) float64 {
		best := 0.0
		for range 5 {
			t0 := time.Now()
			loop(iters, p)
			if d := float64(time.Since(t0).Nanoseconds()) / iters; best == 0 || d < best {
				best = d
			}
		}
		return best
	}
	base := 0.0
	for _, m := range portMixLoops {
		if m.n == 0 {
			base = perIter(m.loop)
		}
	}
	for _, m := range portMixLoops {
		b.Run(fmt.Sprintf("op=%s/n=%d", m.op, m.n), func(b *testing.B) {
			for b.Loop() {
				m.loop(iters, p)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / iters
			b.ReportMetric(ns, "ns/iter")
			b.ReportMetric(12/ns, "Gvpdpbusd/s")
			if m.n > 0 {
				b.ReportMetric((ns/base-1)*12/float64(m.n), "slots")
			}
		})
	}
}

// portMixOperand skips tb where the loops cannot run, else returns their
// memory operand: 64 readable bytes, 64-byte aligned.
func portMixOperand(tb testing.TB) *byte {
	if !haveKernels {
		tb.Skip("no assembly in this build")
	}
	if missing := cpufeat.Missing(portMixFeatures...); len(missing) > 0 {
		tb.Skipf("CPU lacks %v", missing)
	}
	buf := make([]byte, 128)
	off := (64 - uintptr(unsafe.Pointer(&buf[0]))%64) % 64
	return &buf[off]
}
