package cuda

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
)

// TestRopeDecodeFused holds the engine's two-launch decode attention
// (RopeDecodeAttentionQ) to the four launches it replaces (RopeStore,
// DecodeAttention, Quantize) on the same inputs: the same cache contents,
// the same attention output and the same quantized bytes, to the bit.
func TestRopeDecodeFused(t *testing.T) {
	needCUDA(t)
	e, err := OpenEngine()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		heads, kv, hd, nctx, pos int
		typ                      quant.Type
		neox                     bool
	}{
		{24, 8, 128, 300, 0, quant.Q8_K, true},
		{24, 8, 128, 300, 257, quant.Q8_K, true},
		{32, 8, 64, 200, 131, quant.Q8_K, true},
		{4, 2, 64, 96, 40, quant.Q8_0, true},
		{4, 2, 64, 96, 7, quant.Q8_K, false},
	} {
		t.Run(fmt.Sprintf("h%dkv%dd%d-pos%d-%s-neox%v", tc.heads, tc.kv, tc.hd, tc.pos, tc.typ, tc.neox), func(t *testing.T) {
			if !RopeDecodeFits(tc.heads, tc.kv, tc.hd) {
				t.Fatal("shape refused")
			}
			if err := e.Do(func(l *Launcher) error {
				return checkRopeDecodeFused(t, l, tc.heads, tc.kv, tc.hd, tc.nctx, tc.pos, tc.typ, tc.neox)
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func checkRopeDecodeFused(t *testing.T, l *Launcher, heads, kv, hd, nctx, pos int, typ quant.Type, neox bool) error {
	rng := rand.New(rand.NewPCG(uint64(pos), uint64(hd)))
	randv := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	half := hd / 2
	cs, sn := make([]float32, nctx*half), make([]float32, nctx*half)
	for p := range nctx {
		for i := range half {
			a := float64(p) / math.Pow(500000, float64(2*i)/float64(hd))
			cs[p*half+i], sn[p*half+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	q, k, v := randv(heads*hd), randv(kv*hd), randv(kv*hd)
	cache := randv(kv * nctx * hd) // positions before pos hold history; the rest is overwritten or unread
	var bufs []cu.Ptr
	defer func() {
		for _, p := range bufs {
			_ = l.T.Free(p)
		}
	}()
	up := func(x []float32) cu.Ptr {
		p, err := l.Alloc(4 * len(x))
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, p)
		if err := cu.HtoD(l.T, p, x); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rs, err := quant.RowSize(typ, int64(heads*hd))
	if err != nil {
		return err
	}
	type run struct {
		kc, vc, att []float32
		xq          []byte
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	one := func(fused bool) run {
		pq, pk, pv := up(q), up(k), up(v)
		kc, vc := up(cache), up(cache)
		att := up(make([]float32, heads*hd))
		xqf := make([]float32, (int(rs)+3)/4)
		xq := up(xqf)
		po, pml := up(make([]float32, DecodeSplits*heads*hd)), up(make([]float32, 2*DecodeSplits*heads))
		pp, err := l.Alloc(4)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, pp)
		if err := cu.HtoD(l.T, pp, []int32{int32(pos)}); err != nil {
			t.Fatal(err)
		}
		pcs, psn := up(cs), up(sn)
		if fused {
			err = l.RopeDecodeAttentionQ(att, pq, pk, pv, kc, vc, po, pml, pp, heads, kv, hd, nctx, scale, pcs, psn, neox, xq, typ)
		} else {
			err = l.RopeStore(pq, pk, pv, kc, vc, pp, 1, heads, kv, hd, nctx, pcs, psn, neox)
			if err == nil {
				err = l.DecodeAttention(att, pq, kc, vc, po, pml, pp, heads, kv, hd, nctx, scale)
			}
			if err == nil {
				err = l.Quantize(typ, xq, att, heads*hd)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		r := run{kc: make([]float32, len(cache)), vc: make([]float32, len(cache)), att: make([]float32, heads*hd)}
		for _, c := range []struct {
			dst []float32
			src cu.Ptr
		}{{r.kc, kc}, {r.vc, vc}, {r.att, att}, {xqf, xq}} {
			if err := cu.DtoH(l.T, c.dst, c.src); err != nil {
				t.Fatal(err)
			}
		}
		r.xq = slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&xqf[0])), rs))
		return r
	}
	want, got := one(false), one(true)
	rows := func(c []float32) []float32 { // the history and the new position
		var out []float32
		for h := range kv {
			out = append(out, c[h*nctx*hd:(h*nctx+pos+1)*hd]...)
		}
		return out
	}
	for _, c := range []struct {
		what string
		a, b []float32
	}{{"keys", rows(got.kc), rows(want.kc)}, {"values", rows(got.vc), rows(want.vc)}, {"attention output", got.att, want.att}} {
		for i := range c.a {
			if math.Float32bits(c.a[i]) != math.Float32bits(c.b[i]) {
				t.Errorf("%s differ first at %d: fused %v, unfused %v", c.what, i, c.a[i], c.b[i])
				break
			}
		}
	}
	if !bytes.Equal(got.xq, want.xq) {
		t.Errorf("quantized output differs first at byte %d of %d", firstDiff(got.xq, want.xq), len(want.xq))
	}
	return nil
}
