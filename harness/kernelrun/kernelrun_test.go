package kernelrun

import (
	"strings"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/internal/pool"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/naive"
)

func TestGateThenTime(t *testing.T) {
	reg := ledger.NewRegistry()
	good := naive.MatVec(quant.Q8_0)
	for _, v := range []ledger.Variant{
		{Op: "matvec/q8_0", Name: "naive", Family: ledger.FamilyNaive, Impl: good},
		{Op: "matvec/q8_0", Name: "copy", Family: ledger.FamilyGoUnrolled, Impl: good},
		// Right on one-row shapes only: fails the gate at the others.
		{Op: "matvec/q8_0", Name: "first-row-only", Family: ledger.FamilyGoUnrolled,
			Impl: ledger.MatVec(func(dst []float32, w, xq []byte, k int) {
				good(dst[:1], w, xq, k)
				for i := 1; i < len(dst); i++ {
					dst[i] = dst[0]
				}
			})},
	} {
		if err := reg.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	var events int
	out, err := Run(reg, Options{Ops: []string{"matvec/q8_0"}, Shapes: gate.TailShapes, Seed: 1,
		Protocol: protocol.Kernel{Runs: 3, MinSample: 200 * time.Microsecond, Warmup: 100 * time.Microsecond},
		Progress: func(Event) { events++ }})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := ledger.LookupOp("matvec/q8_0")
	tails := 0
	for _, s := range op.Shapes {
		if !s.Real() {
			tails++
		}
	}
	if len(out.Gates) != 3*tails {
		t.Errorf("%d gate results, want %d", len(out.Gates), 3*tails)
	}
	failed := 0
	for _, g := range out.Gates {
		if g.Outcome == gate.Fail {
			failed++
			if g.Variant != "first-row-only" {
				t.Errorf("unexpected failure %v", g)
			}
		}
	}
	if failed == 0 {
		t.Error("the broken variant passed every shape")
	}
	if len(out.Kernels) != 2*tails {
		t.Fatalf("%d kernel results, want %d (broken variant must not be timed)", len(out.Kernels), 2*tails)
	}
	for _, k := range out.Kernels {
		if k.Variant == "first-row-only" {
			t.Error("a variant that failed the gate was timed")
		}
		if len(k.NsPerOp) != 3 || k.Summary.Median <= 0 || k.GBps <= 0 || k.FLOPs <= 0 {
			t.Errorf("kernel result %+v", k)
		}
	}
	if events != len(out.Gates)+2*tails*3 {
		t.Errorf("%d progress events", events)
	}
	if _, err := Run(reg, Options{Ops: []string{"nonexistent"}}); err == nil {
		t.Error("empty selection: no error")
	}
}

// With Threads > 1 a matvec's rows are split over the workers: the run times
// what passed the gate, the split call is held to one whole call (a
// variant whose shares differ is refused), and ops that are not matvecs are
// refused.
func TestThreadsSplitRows(t *testing.T) {
	reg := ledger.NewRegistry()
	good := naive.MatVec(quant.Q8_0)
	if err := reg.Add(ledger.Variant{Op: "matvec/q8_0", Name: "naive", Family: ledger.FamilyNaive, Impl: good}); err != nil {
		t.Fatal(err)
	}
	prot := protocol.Kernel{Runs: 2, MinSample: 200 * time.Microsecond, Warmup: 100 * time.Microsecond, Threads: 2}
	out, err := Run(reg, Options{Ops: []string{"matvec/q8_0"}, Shapes: gate.TailShapes, Seed: 1, Protocol: prot})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Kernels) == 0 {
		t.Fatal("nothing timed on two threads")
	}
	for _, k := range out.Kernels {
		if len(k.NsPerOp) != 2 || k.Summary.Median <= 0 {
			t.Errorf("kernel result %+v", k)
		}
	}
	if _, err := Run(ledger.Default, Options{Ops: []string{"rmsnorm"}, Shapes: gate.TailShapes, Seed: 1, Protocol: prot}); err == nil ||
		!strings.Contains(err.Error(), "one thread only") {
		t.Errorf("rmsnorm on two threads: err = %v, want a refusal", err)
	}

	// A variant right on whole calls and wrong on a share (its last row off
	// whenever it is handed fewer rows than the shape has).
	op, _ := ledger.LookupOp("matvec/q8_0")
	var shape ledger.Shape
	for _, s := range op.Shapes {
		if s.Real() {
			shape = s
			break
		}
	}
	w, err := workload.New(op, shape, 1)
	if err != nil {
		t.Fatal(err)
	}
	bad := ledger.Variant{Op: op.Name, Name: "share-dependent", Impl: ledger.MatVec(func(dst []float32, wb, xq []byte, k int) {
		good(dst, wb, xq, k)
		if len(dst) < shape.Rows {
			dst[len(dst)-1]++
		}
	})}
	pl := pool.New(2)
	defer pl.Close()
	dst, _ := w.NewOutput()
	if _, err := splitRows(op, w, w.ColdCopies(), bad, dst, pl); err == nil || !strings.Contains(err.Error(), "split over 2 workers") {
		t.Errorf("a variant whose shares differ from one call: err = %v, want the split check's", err)
	}
	if _, err := splitRows(op, w, w.ColdCopies(), ledger.Variant{Op: op.Name, Name: "naive", Impl: good}, dst, pl); err != nil {
		t.Errorf("naive split over two workers: %v", err)
	}
}
