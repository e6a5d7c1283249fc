package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/kernelbench"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/ledger/workload"
)

// Device-resident kernel benchmarks. The ledger's host-slice variants copy
// their inputs up and their outputs down on every call, which on a GPU
// costs far more than the kernel; here the inputs are uploaded once (the
// weights and KV caches as rotating copies that add up to four times the
// L2, as a decode step streams them from HBM), graphLaunches launches are
// captured into a CUDA graph, and the graph's replays are timed with
// events. ns/kernel is the device time of one launch, gaps included, and
// GB/s and GFLOP/s divide the op's own byte and operation counts
// (ledger.Op.Bytes, FLOPs) by it. Each variant is gated at the shape first
// and never timed if it fails.
//
// Names follow kernelbench (BenchmarkMatVec/type=Q4_K/variant=cuda/shape=3072x3072),
// so benchstat compares them with the CPU families'; DAMASCUS_BENCH_SHAPES
// selects shapes as there (default here: 3B).

// graphLaunches is the launches per captured graph.
const graphLaunches = 64

func benchShapes(b *testing.B) gate.Shapes {
	switch v := strings.ToLower(os.Getenv(kernelbench.ShapesEnv)); v {
	case "", "3b":
		return gate.Shapes("3B")
	case "1b":
		return gate.Shapes("1B")
	case "real", "all":
		return gate.RealShapes
	default:
		b.Fatalf("%s=%q: want 1B, 3B or real", kernelbench.ShapesEnv, v)
		return ""
	}
}

// benchKind benchmarks every cuda variant of every op of kind at the real
// shapes selected, plus extra shapes.
func benchKind(b *testing.B, kind ledger.Kind, extra ...ledger.Shape) {
	sel := benchShapes(b)
	for _, op := range ledger.Catalogue() {
		if op.Kind != kind {
			continue
		}
		shapes := append(append([]ledger.Shape(nil), op.Shapes...), extra...)
		for _, v := range ledger.Variants(op.Name) {
			if v.Family != ledger.FamilyCUDA {
				continue
			}
			for _, s := range shapes {
				if s.Real() && sel.Match(s) {
					b.Run(kernelbench.Name(op, v.Name, s), func(b *testing.B) { benchOp(b, op, v, s) })
				}
			}
		}
	}
}

func BenchmarkMatVec(b *testing.B)   { benchKind(b, ledger.KindMatVec) }
func BenchmarkMatMul(b *testing.B)   { benchKind(b, ledger.KindMatMul, prefill3B...) }
func BenchmarkQuantize(b *testing.B) { benchKind(b, ledger.KindQuantize, ffn3B) }
func BenchmarkRMSNorm(b *testing.B)  { benchKind(b, ledger.KindRMSNorm) }
func BenchmarkSiLUMul(b *testing.B)  { benchKind(b, ledger.KindSiLUMul, ffn3B) }
func BenchmarkSoftmax(b *testing.B) {
	benchKind(b, ledger.KindSoftmax, ledger.Shape{K: 1024, Model: "3B", Role: "scores"}, ledger.Shape{K: 128256, Model: "3B", Role: "vocab"})
}

// prefill3B are the 3B's products at pp1024's batch (the catalogue's are
// at 512): Q, K/V, gate/up, down and the vocabulary projection.
var prefill3B = []ledger.Shape{
	{Rows: 3072, K: 3072, N: 1024, Model: "3B", Role: "attn_q"},
	{Rows: 1024, K: 3072, N: 1024, Model: "3B", Role: "attn_kv"},
	{Rows: 8192, K: 3072, N: 1024, Model: "3B", Role: "ffn_up"},
	{Rows: 3072, K: 8192, N: 1024, Model: "3B", Role: "ffn_down"},
	{Rows: 128256, K: 3072, N: 1024, Model: "3B", Role: "output"},
}

// matMulOf is the device-resident launch of matmul variant for f.
func matMulOf(r *gpu, f *format, variant string) (func(t *cu.Thread, s cu.Stream, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error, error) {
	switch variant {
	case "cuda":
		return func(t *cu.Thread, s cu.Stream, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
			return r.matMul(t, s, f, dst, ldd, w, rows, x, n, k)
		}, nil
	case "cuda-mma", "cuda-mma-int":
		integer := variant == "cuda-mma-int"
		return func(t *cu.Thread, s cu.Stream, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
			return r.matMulMMA(t, s, f, integer, dst, ldd, w, rows, x, n, k)
		}, nil
	}
	if p := PipeTileNamed(variant); p != nil {
		return func(t *cu.Thread, s cu.Stream, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
			return r.matMulPipe(t, s, f, p, dst, ldd, w, rows, x, n, k)
		}, nil
	}
	return nil, fmt.Errorf("no matmul kernel for variant %s", variant)
}

// ffn3B is the 3B's FFN width, which the catalogue lists for the 1B only
// (both are 8192).
var ffn3B = ledger.Shape{K: 8192, Model: "3B", Role: "ffn"}

func BenchmarkRoPE(b *testing.B)      { benchKind(b, ledger.KindRoPE) }
func BenchmarkAttention(b *testing.B) { benchKind(b, ledger.KindAttention, depth4096...) }

// depth4096 adds decode at a 4096-token context to the catalogue's 256 and
// 1024 (the engine's long-context benchmarks run there).
var depth4096 = []ledger.Shape{
	{Heads: 32, KVHeads: 8, HeadDim: 64, N: 4096, Model: "1B", Role: "ctx4096"},
	{Heads: 24, KVHeads: 8, HeadDim: 128, N: 4096, Model: "3B", Role: "ctx4096"},
}

// rotation is how many copies of an input of n bytes add up to four L2s.
func rotation(l2, n int) int {
	if n <= 0 {
		return 1
	}
	return min(64, max(1, (4*l2+n-1)/n))
}

// devInputs are a benchmark's device buffers, freed when it ends.
type devInputs struct {
	t    *cu.Thread
	ptrs []cu.Ptr
}

func (d *devInputs) alloc(n int) (cu.Ptr, error) {
	p, err := d.t.Alloc(n + bufPad)
	if err == nil {
		d.ptrs = append(d.ptrs, p)
	}
	return p, err
}

func devUpload[T any](d *devInputs, s cu.Stream, src []T) (cu.Ptr, error) {
	var z T
	p, err := d.alloc(len(src) * sizeOf(z))
	if err != nil {
		return 0, err
	}
	return p, cu.HtoDAsync(d.t, p, src, s)
}

// devUploads uploads each of srcs, in order.
func devUploads(d *devInputs, s cu.Stream, srcs ...[]float32) ([]cu.Ptr, error) {
	ps := make([]cu.Ptr, len(srcs))
	for i, src := range srcs {
		var err error
		if ps[i], err = devUpload(d, s, src); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// copies uploads n copies of src.
func devCopies[T any](d *devInputs, s cu.Stream, src []T, n int) ([]cu.Ptr, error) {
	ps := make([]cu.Ptr, n)
	for i := range ps {
		var err error
		if ps[i], err = devUpload(d, s, src); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

type launcher func(t *cu.Thread, s cu.Stream, i int) error

// prepare uploads the workload of op at s and returns the launch of its
// i-th repetition.
func prepare(r *gpu, d *devInputs, s cu.Stream, op *ledger.Op, variant string, w *workload.Workload) (launcher, error) {
	sh := w.Shape
	l2 := r.dev.L2
	switch op.Kind {
	case ledger.KindMatVec, ledger.KindMatMul:
		f := formats[op.Type]
		dw := f.deviceWeights(w.W, sh.Rows, sh.K)
		pw, err := devCopies(d, s, dw, rotation(l2, len(dw)))
		if err != nil {
			return nil, err
		}
		px, err := devUpload(d, s, w.XQ)
		if err != nil {
			return nil, err
		}
		if op.Kind == ledger.KindMatVec {
			var mv mvLaunch
			for _, c := range unrolls {
				if c.name == variant {
					mv = unrolledMV(c.u)
				}
			}
			for _, c := range xsVariants {
				if c.name == variant {
					mv = xsMV(c.rows)
				}
			}
			switch variant {
			case "cuda-persist":
				mv = (*gpu).persistMatVec
			case "cuda-mega":
				mv = (*gpu).megaMatVec
			case "cuda-mega2":
				mv = (*gpu).megaMatVec2
			}
			if mv == nil {
				return nil, fmt.Errorf("no matvec kernel for variant %s", variant)
			}
			pd, err := d.alloc(4 * sh.Rows)
			if err != nil {
				return nil, err
			}
			return func(t *cu.Thread, s cu.Stream, i int) error {
				return mv(r, t, s, f, pd, pw[i%len(pw)], sh.Rows, px, sh.K)
			}, nil
		}
		pd, err := d.alloc(4 * w.LDD * sh.N)
		if err != nil {
			return nil, err
		}
		mm, err := matMulOf(r, f, variant)
		if err != nil {
			return nil, err
		}
		return func(t *cu.Thread, s cu.Stream, i int) error {
			return mm(t, s, pd, w.LDD, pw[i%len(pw)], sh.Rows, px, sh.N, sh.K)
		}, nil
	case ledger.KindQuantize:
		px, err := devUpload(d, s, w.X)
		if err != nil {
			return nil, err
		}
		pd, err := d.alloc(w.OutLen())
		if err != nil {
			return nil, err
		}
		return func(t *cu.Thread, s cu.Stream, i int) error { return r.quantize(t, s, op.Type, pd, px, len(w.X)) }, nil
	case ledger.KindRMSNorm, ledger.KindSiLUMul:
		in, err := devUploads(d, s, w.X, w.Aux)
		if err != nil {
			return nil, err
		}
		px, pa := in[0], in[1]
		pd, err := d.alloc(4 * len(w.X))
		if err != nil {
			return nil, err
		}
		if op.Kind == ledger.KindRMSNorm {
			return func(t *cu.Thread, s cu.Stream, i int) error { return r.rmsNorm(t, s, pd, px, pa, len(w.X), w.Eps) }, nil
		}
		return func(t *cu.Thread, s cu.Stream, i int) error { return r.siluMul(t, s, pd, px, pa, len(w.X)) }, nil
	case ledger.KindSoftmax:
		px, err := devUpload(d, s, w.X)
		if err != nil {
			return nil, err
		}
		return func(t *cu.Thread, s cu.Stream, i int) error { return r.softmax(t, s, px, len(w.X)) }, nil
	case ledger.KindRoPE:
		in, err := devUploads(d, s, w.X, w.Cos, w.Sin)
		if err != nil {
			return nil, err
		}
		px, pc, ps := in[0], in[1], in[2]
		return func(t *cu.Thread, s cu.Stream, i int) error {
			return r.rope(t, s, px, sh.Heads, sh.HeadDim, pc, ps, w.NeoX)
		}, nil
	case ledger.KindAttention:
		p, err := planAttention(r.dev.SMs, sh.Heads, sh.KVHeads, sh.HeadDim, sh.N)
		if err != nil {
			return nil, err
		}
		n := rotation(l2, 2*4*len(w.K))
		pk, err := devCopies(d, s, w.K, n)
		if err != nil {
			return nil, err
		}
		pv, err := devCopies(d, s, w.V, n)
		if err != nil {
			return nil, err
		}
		pq, err := devUpload(d, s, w.X)
		if err != nil {
			return nil, err
		}
		out := sh.Heads * sh.HeadDim
		po, err := d.alloc(4 * p.nChunks * out)
		if err != nil {
			return nil, err
		}
		pml, err := d.alloc(8 * p.nChunks * sh.Heads)
		if err != nil {
			return nil, err
		}
		pd, err := d.alloc(4 * out)
		if err != nil {
			return nil, err
		}
		return func(t *cu.Thread, s cu.Stream, i int) error {
			j := i % n
			return r.attention(t, s, p, pd, pq, pk[j], pv[j], po, pml, sh.Heads, sh.KVHeads, sh.HeadDim, sh.N, w.Scale)
		}, nil
	}
	return nil, fmt.Errorf("no device benchmark for %s", op.Name)
}

func benchOp(b *testing.B, op *ledger.Op, v ledger.Variant, s ledger.Shape) {
	needCUDA(b)
	c, err := gate.NewCase(op, gate.GateShape(op, s), 1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Check(v); err != nil {
		b.Fatalf("gate failed, not timed: %s at %s: %v", v.ID(), s.Key(op.Kind), err)
	}
	w, err := workload.New(op, s, 1)
	if err != nil {
		b.Fatal(err)
	}
	r, _ := device()
	launches := graphLaunches
	if op.Kind == ledger.KindMatMul {
		launches = 8 // milliseconds each
	}
	timeGraph(b, r, launches, op.Bytes(s), op.FLOPs(s), func(d *devInputs, st cu.Stream) (launcher, error) { return prepare(r, d, st, op, v.Name, w) })
}

// timeGraph sets up inputs, checks one round of launches, captures that
// many of them into a graph and times its replays.
func timeGraph(b *testing.B, r *gpu, launches int, bytes, flops float64, setup func(*devInputs, cu.Stream) (launcher, error)) {
	var (
		d      *devInputs
		g      *cu.Graph
		st     cu.Stream
		e0, e1 cu.Event
	)
	defer func() {
		r.dev.Do(func(t *cu.Thread) error {
			t.DestroyGraph(g)
			for _, e := range []cu.Event{e0, e1} {
				if e != 0 {
					t.DestroyEvent(e)
				}
			}
			if d != nil {
				for _, p := range d.ptrs {
					t.Free(p)
				}
			}
			if st != 0 {
				t.DestroyStream(st)
			}
			return nil
		})
	}()
	err := r.dev.Do(func(t *cu.Thread) error {
		var err error
		if st, err = t.NewStream(); err != nil {
			return err
		}
		d = &devInputs{t: t}
		launch, err := setup(d, st)
		if err != nil {
			return err
		}
		for i := range launches { // uncaptured, so a bad launch shows here
			if err := launch(t, st, i); err != nil {
				return err
			}
		}
		if err := t.Sync(st); err != nil {
			return err
		}
		if g, err = t.Capture(st, func() error {
			for i := range launches {
				if err := launch(t, st, i); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		for range 2 { // warm-up replays
			if err := t.LaunchGraph(g, st); err != nil {
				return err
			}
		}
		if e0, e1, err = t.NewEvents(); err != nil {
			return err
		}
		return t.Sync(st)
	})
	if err != nil {
		b.Fatal(err)
	}
	// Each replay is timed alone and waited for: the host's enqueueing
	// runs far ahead of the device otherwise, and the benchmark's
	// iteration count would be sized by the enqueue rate.
	replays, ms := 0, 0.0
	for b.Loop() {
		err := r.dev.Do(func(t *cu.Thread) error {
			el, err := t.Time(st, e0, e1, func() error { return t.LaunchGraph(g, st) })
			ms += float64(el)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		replays++
	}
	ns := ms * 1e6 / float64(replays*launches)
	b.ReportMetric(ns, "ns/kernel")
	if bytes > 0 {
		b.ReportMetric(bytes/ns, "GB/s")
	}
	if flops > 0 {
		b.ReportMetric(flops/ns, "GFLOP/s")
	}
}

// BenchmarkCopy is the ceiling the matvecs are held to: a device-to-device
// copy of 1 GiB, counting the bytes read and written.
func BenchmarkCopy(b *testing.B) {
	needCUDA(b)
	r, _ := device()
	const n = 1 << 30
	b.Run("bytes=1GiB", func(b *testing.B) {
		timeGraph(b, r, 8, 2*n, 0, func(d *devInputs, s cu.Stream) (launcher, error) {
			src, err := d.alloc(n)
			if err != nil {
				return nil, err
			}
			dst, err := d.alloc(n)
			if err != nil {
				return nil, err
			}
			return func(t *cu.Thread, s cu.Stream, i int) error { return t.DtoDAsync(dst, src, n, s) }, nil
		})
	})
}

// BenchmarkLaunch measures what one small kernel costs launched one at a
// time from Go (each launch a trip to the device thread and a
// cuLaunchKernel) against the same kernel replayed from a graph: the
// number that decides how a decode step must be issued.
func BenchmarkLaunch(b *testing.B) {
	needCUDA(b)
	r, _ := device()
	const n = 8192
	var d *devInputs
	var pd, pg cu.Ptr
	var st cu.Stream
	err := r.dev.Do(func(t *cu.Thread) error {
		var err error
		d = &devInputs{t: t}
		if st, err = t.NewStream(); err != nil {
			return err
		}
		if pd, err = d.alloc(4 * n); err != nil {
			return err
		}
		if pg, err = devUpload(d, st, ledgertest.Floats(ledgertest.NewRand(4), n)); err != nil {
			return err
		}
		return t.Sync(st)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer r.dev.Do(func(t *cu.Thread) error {
		for _, p := range d.ptrs {
			t.Free(p)
		}
		return t.DestroyStream(st)
	})
	b.Run("mode=stream/op=silu_mul/n=8192", func(b *testing.B) {
		// graphLaunches launches a trip to the device thread, then a wait.
		launches := 0
		for b.Loop() {
			err := r.dev.Do(func(t *cu.Thread) error {
				for range graphLaunches {
					if err := r.siluMul(t, st, pd, pg, pg, n); err != nil {
						return err
					}
				}
				return t.Sync(st)
			})
			if err != nil {
				b.Fatal(err)
			}
			launches += graphLaunches
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(launches), "ns/kernel")
	})
	b.Run("mode=graph/op=silu_mul/n=8192", func(b *testing.B) {
		timeGraph(b, r, graphLaunches, 12*n, 0, func(d2 *devInputs, s cu.Stream) (launcher, error) {
			return func(t *cu.Thread, s cu.Stream, i int) error { return r.siluMul(t, s, pd, pg, pg, n) }, nil
		})
	})
}
