// Package kernelbench turns the kernel ledger into `go test -bench` sweeps.
// A variant package benchmarks its variants of an op kind with one line,
//
//	func BenchmarkMatVec(b *testing.B) { kernelbench.Run(b, ledger.KindMatVec) }
//
// which runs every variant whose code lives in the calling package over the
// op shapes as sub-benchmarks named the way benchstat groups them:
// BenchmarkMatVec/type=Q4_K/variant=avx512/shape=2048x2048 (untyped ops
// drop type=). Each variant is gated at the shape first and never timed if
// it fails; GB/s and GFLOP/s are reported as custom metrics. Matrix weights
// rotate through copies larger than the last-level cache, so the numbers are
// those of weights streamed from memory, as in decode.
//
// DAMASCUS_BENCH_SHAPES selects the shapes: tails, real, 1B (the default:
// the 1B shapes plus the tails), 3B or all.
package kernelbench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/workload"
)

// ShapesEnv names the environment variable selecting the shapes.
const ShapesEnv = "DAMASCUS_BENCH_SHAPES"

// Run benchmarks the calling package's variants of every op of the given
// kinds. With more than one kind, each sub-benchmark name starts with
// op=<op>/ (BenchmarkOps/op=rmsnorm/variant=avx2/shape=n2048).
func Run(b *testing.B, kinds ...ledger.Kind) {
	// An external test package (naive_test) benchmarks the package it tests.
	pkg := ledger.CallerPackage(1)
	sel, err := gate.ShapesFromEnv(ShapesEnv, gate.Shapes("1B"))
	if err != nil {
		b.Fatal(err)
	}
	found := false
	for _, op := range ledger.Catalogue() {
		if !slices.Contains(kinds, op.Kind) {
			continue
		}
		prefix := ""
		if len(kinds) > 1 {
			prefix = "op=" + op.Name + "/"
		}
		for _, v := range ledger.Variants(op.Name) {
			if v.Package() != pkg {
				continue
			}
			found = true
			for _, s := range op.Shapes {
				if sel.Match(s) {
					b.Run(prefix+Name(op, v.Name, s), func(b *testing.B) { bench(b, op, v, s) })
				}
			}
		}
	}
	if !found {
		b.Skipf("package %s registers no %v variant", pkg, kinds)
	}
}

// Name is the sub-benchmark name of variant at shape s of op.
func Name(op *ledger.Op, variant string, s ledger.Shape) string {
	switch op.Kind {
	case ledger.KindMatVec, ledger.KindMatMul, ledger.KindQuantize, ledger.KindDequantize:
		return fmt.Sprintf("type=%s/variant=%s/shape=%s", op.Type, variant, s.Key(op.Kind))
	}
	return fmt.Sprintf("variant=%s/shape=%s", variant, s.Key(op.Kind))
}

func bench(b *testing.B, op *ledger.Op, v ledger.Variant, s ledger.Shape) {
	if miss := v.Missing(); len(miss) > 0 {
		b.Skipf("needs %s", strings.Join(miss, ", "))
	}
	c, err := gate.NewCase(op, gate.GateShape(op, s), 1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Check(v); err != nil {
		b.Fatalf("gate failed, not timed: %s:%s at %s: %v", op.Name, v.Name, s.Key(op.Kind), err)
	}
	w, err := workload.New(op, s, 1)
	if err != nil {
		b.Fatal(err)
	}
	dst, dstb := w.NewOutput()
	// Matrix weights rotate through copies larger than the cache, as a
	// decode step reads them.
	copies, err := workload.InLayout(w.ColdCopies(), v.Layout)
	if err != nil {
		b.Fatal(err)
	}
	call, err := workload.Cycle(copies, v.Impl, dst, dstb)
	if err != nil {
		b.Fatal(err)
	}
	call() // page in the output
	b.ResetTimer()
	for b.Loop() {
		call()
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	if ns > 0 {
		b.ReportMetric(op.Bytes(s)/ns, "GB/s")
		b.ReportMetric(op.FLOPs(s)/ns, "GFLOP/s")
	}
}
