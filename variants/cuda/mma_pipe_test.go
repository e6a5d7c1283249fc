package cuda

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
)

// pipeCheckShapes are where TestMMAPipeMatchesInt compares the kernels: a
// 3B product at pp1024's batch, then shapes that cut every tile short
// (rows not a multiple of 128, tokens not of 64, one to three super-blocks;
// the tail shapes get the workload's gaps between output columns).
var pipeCheckShapes = []ledger.Shape{
	{Rows: 3072, K: 3072, N: 1024, Model: "3B", Role: "attn_q"},
	{Rows: 1000, K: 768, N: 300},
	{Rows: 17, K: 256, N: 5},
	{Rows: 130, K: 512, N: 65},
}

// TestMMAPipeMatchesInt is the first check of cuda-mma-pipe on a device (it
// skips without one): on the same random weights and activations its
// outputs must be bit for bit those of cuda-mma-int, whose arithmetic it
// copies (the same int32 sub-block sums, then the same float operations in
// the same order; the Q4_K min sums are the same integers taken on the
// tensor cores). Every output starts as a NaN pattern and the gaps between
// output columns must keep it. Then each kernel is timed at the 3B shape
// (device-resident, events, median of a few launches) for a first look;
// the benchmarks (BenchmarkMatMul) are the measurement.
func TestMMAPipeMatchesInt(t *testing.T) {
	needCUDA(t)
	info, arch, err := KernelInfo()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range PipeTiles {
		for _, k := range p.kernels {
			fi := info[k]
			t.Logf("%s (%s): %d registers, %d local bytes, %d dynamic shared bytes", k, arch, fi.Registers, fi.LocalBytes, dynamicShared(k))
			if fi.LocalBytes > 0 && !p.spills {
				t.Errorf("%s uses %d bytes of local memory per thread", k, fi.LocalBytes)
			}
		}
	}
	for _, p := range PipeTiles {
		t.Run(p.Variant, func(t *testing.T) { pipeMatchesInt(t, p) })
	}
}

func pipeMatchesInt(t *testing.T, p *PipeTile) {
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		op, ok := ledger.LookupOp(ledger.MatMulOp(wt))
		if !ok {
			t.Fatalf("no op %s", ledger.MatMulOp(wt))
		}
		f := formats[wt]
		for _, s := range pipeCheckShapes {
			w, err := workload.New(op, s, 7)
			if err != nil {
				t.Fatal(err)
			}
			name := wt.String() + "/" + s.Key(ledger.KindMatMul)
			fill := math.Float32frombits(poison)
			want, got := make([]float32, w.OutLen()), make([]float32, w.OutLen())
			for i := range want {
				want[i], got[i] = fill, fill
			}
			hostMatMul(f, true, true)(want, w.LDD, w.W, s.Rows, w.XQ, s.N, s.K)
			hostMatMulPipe(f, p)(got, w.LDD, w.W, s.Rows, w.XQ, s.N, s.K)
			diff, first, maxRel := 0, -1, 0.0
			for i := range want {
				if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
					if diff++; first < 0 {
						first = i
					}
					if d := math.Abs(float64(got[i]-want[i])) / math.Max(math.Abs(float64(want[i])), 1e-30); d > maxRel || math.IsNaN(d) {
						maxRel = d
					}
				}
			}
			unwritten := 0
			for j := range s.N {
				for r := range s.Rows {
					if math.Float32bits(got[j*w.LDD+r]) == poison {
						unwritten++
					}
				}
			}
			if diff > 0 {
				t.Errorf("%s: %d of %d outputs differ from cuda-mma-int's bits (first at %d: %g, want %g; largest relative difference %.3g)",
					name, diff, len(want), first, got[first], want[first], maxRel)
			}
			if unwritten > 0 {
				t.Errorf("%s: %d outputs left unwritten", name, unwritten)
			}
			if diff == 0 && unwritten == 0 {
				t.Logf("%s: %d outputs bit-identical to cuda-mma-int", name, s.Rows*s.N)
			}
			if !s.Real() {
				c, err := gate.NewCase(op, s, 7)
				if err != nil {
					t.Fatal(err)
				}
				v, _ := ledger.Lookup(op.Name, p.Variant)
				if m, err := c.Check(v); err != nil {
					t.Errorf("%s: gate: %v", name, err)
				} else {
					t.Logf("%s: gate passes, NMSE %.3g", name, m.NMSE)
				}
			}
		}
		timePipe(t, wt, p, pipeCheckShapes[0])
	}
}

// timePipe logs the median device time of cuda-mma-int's and p's kernels
// at shape s, launched alternately on the same device-resident inputs.
func timePipe(t *testing.T, wt quant.Type, p *PipeTile, s ledger.Shape) {
	op, _ := ledger.LookupOp(ledger.MatMulOp(wt))
	w, err := workload.New(op, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	f := formats[wt]
	r, _ := device()
	const reps = 9
	ms := map[string][]float64{}
	err = r.dev.Do(func(th *cu.Thread) error {
		d := &devInputs{t: th}
		defer func() {
			for _, q := range d.ptrs {
				th.Free(q)
			}
		}()
		st, err := th.Stream()
		if err != nil {
			return err
		}
		pw, err := devUpload(d, st, f.deviceWeights(w.W, s.Rows, s.K))
		if err != nil {
			return err
		}
		px, err := devUpload(d, st, w.XQ)
		if err != nil {
			return err
		}
		pd, err := d.alloc(4 * w.OutLen())
		if err != nil {
			return err
		}
		e0, e1, err := th.NewEvents()
		if err != nil {
			return err
		}
		defer th.DestroyEvent(e0)
		defer th.DestroyEvent(e1)
		kernels := map[string]func() error{
			"cuda-mma-int": func() error { return r.matMulMMA(th, st, f, true, pd, w.LDD, pw, s.Rows, px, s.N, s.K) },
			p.Variant:      func() error { return r.matMulPipe(th, st, f, p, pd, w.LDD, pw, s.Rows, px, s.N, s.K) },
		}
		for i := range reps + 1 {
			for _, name := range []string{"cuda-mma-int", p.Variant} {
				el, err := th.Time(st, e0, e1, kernels[name])
				if err != nil {
					return err
				}
				if i > 0 { // the first round warms up
					ms[name] = append(ms[name], float64(el))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	flops := 2 * float64(s.Rows) * float64(s.K) * float64(s.N)
	var line []string
	for _, name := range []string{"cuda-mma-int", p.Variant} {
		m := median(ms[name])
		line = append(line, name+" "+formatMs(m, flops))
	}
	t.Logf("%s %s (median of %d, one launch each, L2 warm): %s", wt, s.Key(ledger.KindMatMul), reps, strings.Join(line, ", "))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func formatMs(ms, flops float64) string {
	return fmt.Sprintf("%.1f µs (%.1f TOPS)", ms*1000, flops/(ms*1e9))
}

// TestMMAPipeNoSpills fails on any spill of mma_pipe.cu's kernels (but
// those of an instance marked spills, whose bytes it logs), or on
// registers that would not let an instance's MinBlocks blocks share an SM.
func TestMMAPipeNoSpills(t *testing.T) {
	_, res := ptxasResources(t, "mma_pipe.cu", nil, pipeKernelNames()...)
	for _, p := range PipeTiles {
		for _, k := range p.kernels {
			checkResources(t, k, res[k], 65536/(p.Threads*p.MinBlocks), p.spills)
		}
	}
}
