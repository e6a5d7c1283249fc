package cuda

import (
	"fmt"
	"math"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

// TestFattnNoSpills fails on any spill or stack frame of fattn.cu's
// kernels, or where a kernel's registers would not let two blocks of 256
// threads share an SM (at most 128), or its shared memory would not
// (2 × (dynamic + 1 KiB reserved) ≤ 228 KiB).
func TestFattnNoSpills(t *testing.T) {
	var ks []string
	for _, k := range fattnKernels {
		ks = append(ks, k.name)
	}
	requireNoSpills(t, "fattn.cu", nil, 65536/(2*fattnThreads), ks...)
	for _, k := range ks {
		if sh := dynamicShared(k); sh == 0 || 2*(sh+1024) > 228<<10 {
			t.Errorf("%s: %d dynamic shared bytes (two blocks an SM need at most %d)", k, sh, 114<<10-1024)
		}
	}
}

// fattnShape is a layer's heads and a prefill batch: n tokens from
// position pos0 (a prefix of pos0 positions already in the cache).
type fattnShape struct{ nHeads, nKV, hd, n, pos0 int }

func (s fattnShape) String() string {
	return fmt.Sprintf("h%dkv%dd%dn%dpos%d", s.nHeads, s.nKV, s.hd, s.n, s.pos0)
}

// fattnInputs are a case's inputs on the host: q and the cache in the
// engine's layouts, the cache nctx positions of which the pos0+n first are
// set and the tail after them NaN (a kernel that reads past its keys, unmasked,
// turns its output NaN).
type fattnInputs struct {
	fattnShape
	nctx      int
	q, kc, vc []float32
	scale     float32
}

func newFattnInputs(s fattnShape, seed uint64, tail int) fattnInputs {
	r := ledgertest.NewRand(seed)
	in := fattnInputs{fattnShape: s, nctx: s.pos0 + s.n + tail, scale: float32(1 / math.Sqrt(float64(s.hd)))}
	in.q = make([]float32, s.n*s.nHeads*s.hd)
	for i := range in.q {
		in.q[i] = 3 * float32(2*r.Float64()-1) // peaky softmaxes: the running max moves between tiles
	}
	in.kc, in.vc = make([]float32, s.nKV*in.nctx*s.hd), make([]float32, s.nKV*in.nctx*s.hd)
	nan := float32(math.NaN())
	for h := range s.nKV {
		for t := range in.nctx {
			for d := range s.hd {
				i := (h*in.nctx+t)*s.hd + d
				if t < s.pos0+s.n {
					in.kc[i], in.vc[i] = float32(2*r.Float64()-1), float32(2*r.Float64()-1)
				} else {
					in.kc[i], in.vc[i] = nan, nan
				}
			}
		}
	}
	return in
}

// reference is the attention in float64.
func (in fattnInputs) reference() []float64 {
	s := in.fattnShape
	g := s.nHeads / s.nKV
	out := make([]float64, len(in.q))
	sc := make([]float64, s.pos0+s.n)
	for j := range s.n {
		ctx := s.pos0 + j + 1
		for h := range s.nHeads {
			qr := in.q[(j*s.nHeads+h)*s.hd:][:s.hd]
			kvh := h / g
			m := math.Inf(-1)
			for t := range ctx {
				kr := in.kc[(kvh*in.nctx+t)*s.hd:][:s.hd]
				d := 0.0
				for i := range s.hd {
					d += float64(qr[i]) * float64(kr[i])
				}
				sc[t] = d * float64(in.scale)
				m = math.Max(m, sc[t])
			}
			l := 0.0
			for t := range ctx {
				sc[t] = math.Exp(sc[t] - m)
				l += sc[t]
			}
			o := out[(j*s.nHeads+h)*s.hd:][:s.hd]
			for t := range ctx {
				vr := in.vc[(kvh*in.nctx+t)*s.hd:][:s.hd]
				for i := range s.hd {
					o[i] += sc[t] / l * float64(vr[i])
				}
			}
		}
	}
	return out
}

// runBoth runs eattn_split + eattn_combine (the engine's batch plan) and
// fattn on in, each into an output poisoned first; split is nil where the
// split kernels do not take the heads (more than MaxGroup a KV head).
func runBoth(t testing.TB, in fattnInputs) (split, flash []float32) {
	e, err := OpenEngine()
	if err != nil {
		t.Fatal(err)
	}
	s := in.fattnShape
	split, flash = make([]float32, len(in.q)), make([]float32, len(in.q))
	err = e.Do(func(l *Launcher) error {
		var ptrs []cu.Ptr
		defer func() {
			for _, p := range ptrs {
				l.T.Free(p)
			}
		}()
		alloc := func(n int) (cu.Ptr, error) {
			p, err := l.Alloc(n)
			if err == nil {
				ptrs = append(ptrs, p)
			}
			return p, err
		}
		up := func(src []float32) (cu.Ptr, error) {
			p, err := alloc(4 * len(src))
			if err != nil {
				return 0, err
			}
			return p, cu.HtoDAsync(l.T, p, src, l.S)
		}
		pq, err := up(in.q)
		if err != nil {
			return err
		}
		pk, err := up(in.kc)
		if err != nil {
			return err
		}
		pv, err := up(in.vc)
		if err != nil {
			return err
		}
		pp, err := alloc(4)
		if err != nil {
			return err
		}
		if err := cu.HtoDAsync(l.T, pp, []int32{int32(s.pos0)}, l.S); err != nil {
			return err
		}
		ps, err := alloc(4 * len(in.q))
		if err != nil {
			return err
		}
		pf, err := alloc(4 * len(in.q))
		if err != nil {
			return err
		}
		for _, p := range []cu.Ptr{ps, pf} {
			if err := l.T.MemsetD32Async(p, poison, len(in.q), l.S); err != nil {
				return err
			}
		}
		if s.nHeads/s.nKV > MaxGroup {
			split = nil
			if err := l.AttentionFlash(pf, pq, pk, pv, pp, s.n, s.nHeads, s.nKV, s.hd, in.nctx, in.scale); err != nil {
				return err
			}
			if err := cu.DtoHAsync(l.T, flash, pf, l.S); err != nil {
				return err
			}
			return l.T.Sync(l.S)
		}
		plan, err := PlanAttention(s.nHeads, s.nKV, s.hd, in.nctx, 256, 64)
		if err != nil {
			return err
		}
		po, err := alloc(4 * s.n * plan.PartialFloats(s.nHeads, s.hd))
		if err != nil {
			return err
		}
		pml, err := alloc(8 * s.n * plan.NChunks * s.nHeads)
		if err != nil {
			return err
		}
		if err := l.Attention(plan, ps, pq, pk, pv, po, pml, pp, s.n, s.nHeads, s.nKV, s.hd, in.nctx, in.scale); err != nil {
			return err
		}
		if err := l.AttentionFlash(pf, pq, pk, pv, pp, s.n, s.nHeads, s.nKV, s.hd, in.nctx, in.scale); err != nil {
			return err
		}
		if err := cu.DtoHAsync(l.T, split, ps, l.S); err != nil {
			return err
		}
		if err := cu.DtoHAsync(l.T, flash, pf, l.S); err != nil {
			return err
		}
		return l.T.Sync(l.S)
	})
	if err != nil {
		t.Fatal(err)
	}
	return split, flash
}

// relDiff is max |a−b| over max |b|, +Inf where a has a NaN or infinity
// (the poison left in an output not written, or a read past the keys).
func relDiff[T float32 | float64](a []float32, b []T) (float64, int) {
	worst, at, big := 0.0, -1, 0.0
	for i := range b {
		big = math.Max(big, math.Abs(float64(b[i])))
	}
	for i := range a {
		x := float64(a[i])
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return math.Inf(1), i
		}
		if d := math.Abs(x - float64(b[i])); d > worst {
			worst, at = d, i
		}
	}
	if big == 0 {
		return worst, at
	}
	return worst / big, at
}

// TestFlashPrefillMatchesSplit is the first check of fattn on a device (it
// skips without one): at every shape its output must be within 1e-4 of
// eattn_split + eattn_combine's (relative to the largest |value|), and at
// the smaller ones within 1e-4 of a float64 reference. The worst is logged
// per shape.
func TestFlashPrefillMatchesSplit(t *testing.T) {
	needCUDA(t)
	const tol = 1e-4
	worstAll := 0.0
	for _, h := range []struct{ nHeads, nKV, hd int }{{24, 8, 128}, {32, 8, 64}, {4, 4, 64}, {8, 1, 128}, {16, 1, 64}} {
		for _, n := range []int{1, 7, 64, 300, 512, 1024} {
			for _, pos0 := range []int{0, 5, 512} {
				if n == 1024 && pos0 != 0 {
					continue // a whole pp1024 in one batch (--batch 1024) from an empty cache only
				}
				s := fattnShape{h.nHeads, h.nKV, h.hd, n, pos0}
				in := newFattnInputs(s, uint64(n*1000+pos0), 19)
				split, flash := runBoth(t, in)
				d, at, msg := 0.0, -1, fmt.Sprintf("%v:", s)
				if split != nil {
					d, at = relDiff(flash, split)
					worstAll = math.Max(worstAll, d)
					msg += fmt.Sprintf(" flash against split %.3g (at %d)", d, at)
					if sd, _ := relDiff(split, split); math.IsInf(sd, 0) {
						t.Errorf("%v: the split kernels left NaN or Inf", s)
					}
				}
				if split == nil || n*(pos0+n)*s.nHeads*s.hd <= 64*600*24*128 {
					rd, rat := relDiff(flash, in.reference())
					msg += fmt.Sprintf(", against float64 %.3g (at %d)", rd, rat)
					if rd > tol {
						t.Errorf("%v: flash against the float64 reference %.3g (at %d), want ≤ %g", s, rd, rat, tol)
					}
				}
				t.Log(msg)
				if d > tol {
					t.Errorf("%v: flash against split %.3g at %d (flash %g, split %g), want ≤ %g", s, d, at, at0(flash, at), at0(split, at), tol)
				}
			}
		}
	}
	t.Logf("worst flash against split: %.3g", worstAll)
}

func at0(x []float32, i int) float32 {
	if i < 0 || i >= len(x) {
		return 0
	}
	return x[i]
}

// TestFlashPrefillRefuses: heads the kernels do not take are errors.
func TestFlashPrefillRefuses(t *testing.T) {
	for _, c := range []struct{ nHeads, nKV, hd int }{{24, 8, 96}, {24, 8, 256}, {130, 2, 64}, {24, 7, 64}} {
		if err := FlashPrefillFits(c.nHeads, c.nKV, c.hd); err == nil {
			t.Errorf("%d heads over %d of %d: no error", c.nHeads, c.nKV, c.hd)
		}
	}
	for _, hd := range []int{64, 128} {
		if err := FlashPrefillFits(16*8, 8, hd); err != nil {
			t.Errorf("heads of %d: %v", hd, err)
		}
	}
}

// BenchmarkAttentionPrefill times one layer's prefill attention of 512
// tokens (the engine's batch) from device-resident inputs, the 3B's and
// the 1B's heads, at the first batch of a prompt (pos0 0) and the second
// (pos0 512): split is eattn_split + eattn_combine with the engine's batch
// plan, flash is fattn. GFLOP/s counts 4·hd·nHeads per (token, key) pair.
func BenchmarkAttentionPrefill(b *testing.B) {
	shapes := []fattnShape{{24, 8, 128, 512, 0}, {24, 8, 128, 512, 512}, {32, 8, 64, 512, 0}, {32, 8, 64, 512, 512}}
	for _, variant := range []string{"split", "flash"} {
		for _, s := range shapes {
			b.Run("variant="+variant+"/shape="+s.String(), func(b *testing.B) {
				needCUDA(b)
				r, _ := device()
				in := newFattnInputs(s, 1, 0)
				pairs := float64(s.n) * (float64(s.pos0) + float64(s.n+1)/2)
				flops := 4 * pairs * float64(s.hd*s.nHeads)
				timeGraph(b, r, 16, 0, flops, func(d *devInputs, st cu.Stream) (launcher, error) {
					qkv, err := devUploads(d, st, in.q, in.kc, in.vc)
					if err != nil {
						return nil, err
					}
					pq, pk, pv := qkv[0], qkv[1], qkv[2]
					pp, err := devUpload(d, st, []int32{int32(s.pos0)})
					if err != nil {
						return nil, err
					}
					plan, err := PlanAttention(s.nHeads, s.nKV, s.hd, in.nctx, 256, 64)
					if err != nil {
						return nil, err
					}
					po, err := d.alloc(4 * s.n * plan.PartialFloats(s.nHeads, s.hd))
					if err != nil {
						return nil, err
					}
					pml, err := d.alloc(8 * s.n * plan.NChunks * s.nHeads)
					if err != nil {
						return nil, err
					}
					pd, err := d.alloc(4 * len(in.q))
					if err != nil {
						return nil, err
					}
					return func(t *cu.Thread, st cu.Stream, i int) error {
						l := &Launcher{r: r, T: t, S: st}
						if variant == "flash" {
							return l.AttentionFlash(pd, pq, pk, pv, pp, s.n, s.nHeads, s.nKV, s.hd, in.nctx, in.scale)
						}
						return l.Attention(plan, pd, pq, pk, pv, po, pml, pp, s.n, s.nHeads, s.nKV, s.hd, in.nctx, in.scale)
					}, nil
				})
			})
		}
	}
}
