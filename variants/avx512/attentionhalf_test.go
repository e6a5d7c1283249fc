//go:build amd64 && !noasm

package avx512

import (
	"fmt"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
)

// The 16-bit cache kernels give, bit for bit, the attention of the same
// cache widened to float32 first (the engine's path before them), over
// head sizes on and off the 16-lane grid and groups of 1 to 6 heads, with
// guards around the output and NaN rows past the cache's end.
func TestAttentionHalfMatchesWidened(t *testing.T) {
	need(t, "avx512f", "avx512vl", "avx512bw", "f16c")
	r := ledgertest.NewRand(11)
	for _, c := range []struct {
		typ    quant.Type
		narrow func(float32) uint16
		widen  func(uint16) float32
		f      func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32)
		rc     cacheRounding
	}{
		{quant.F16, quant.Float32ToFP16, quant.FP16ToFloat32, AttentionF16, f16Cache},
		{quant.BF16, quant.Float32ToBF16, quant.BF16ToFloat32, AttentionBF16, bf16Cache},
	} {
		for _, s := range []struct{ heads, kvHeads, headDim, nCtx int }{
			{1, 1, 1, 1}, {2, 1, 16, 3}, {4, 2, 20, 17}, {6, 1, 64, 70}, {24, 8, 128, 300}, {32, 8, 64, 129}, {3, 3, 65, 9}, {8, 2, 130, 33},
		} {
			t.Run(fmt.Sprintf("%s/h%dkv%dd%dctx%d", c.typ, s.heads, s.kvHeads, s.headDim, s.nCtx), func(t *testing.T) {
				width, n := s.heads*s.headDim, s.nCtx*s.kvHeads*s.headDim
				q := ledgertest.Floats(r, width)
				k16, v16 := make([]uint16, n+64), make([]uint16, n+64)
				k32, v32 := make([]float32, n), make([]float32, n)
				for i, x := range ledgertest.Floats(r, 2*n) {
					h := c.narrow(x)
					if i < n {
						k16[i], k32[i] = h, c.widen(h)
					} else {
						v16[i-n], v32[i-n] = h, c.widen(h)
					}
				}
				for i := n; i < n+64; i++ { // NaN past the end
					k16[i], v16[i] = 0x7e00, 0x7fc0
				}
				scale := float32(1 / math.Sqrt(float64(s.headDim)))
				want := make([]float32, width)
				attentionGQA(c.rc, want, q, k32, v32, s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
				sameBitsGuarded(t, want, "", "the widened cache's", func(got []float32) {
					c.f(got, q, k16[:n], v16[:n], s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
				})
			})
		}
	}
}

// Decode calls them with one more position every token; the score buffer
// grows geometrically, so those calls do not allocate.
func TestAttentionHalfDoesNotAllocate(t *testing.T) {
	need(t, "avx512f", "avx512vl", "avx512bw", "f16c")
	const heads, kvHeads, headDim, maxCtx = 4, 1, 64, 200
	q := ledgertest.Floats(ledgertest.NewRand(2), heads*headDim)
	k, v := make([]uint16, maxCtx*headDim), make([]uint16, maxCtx*headDim)
	out := make([]float32, heads*headDim)
	for _, f := range []func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32){AttentionF16, AttentionBF16, AttentionF16x4, AttentionBF16x4, AttentionF16x4W1, AttentionBF16x4W1, AttentionF16x4W1Pf, AttentionBF16x4W1Pf} {
		ctx := 1
		f(out, q, k, v, heads, kvHeads, headDim, ctx, 0.125)
		allocs := testing.AllocsPerRun(maxCtx-2, func() {
			ctx++
			f(out, q, k, v, heads, kvHeads, headDim, ctx, 0.125)
		})
		if allocs != 0 {
			t.Errorf("%.2f allocations per call", allocs)
		}
	}
}

// The 4x4 scores sum each dot product in another order: their outputs
// stay within a rounding of the type of AttentionF16/BF16's, with guards
// intact, over head sizes on the 16-grid (and one off it, which takes
// AttentionF16's path) and positions not a multiple of four.
func TestAttentionHalf4x4(t *testing.T) {
	need(t, "avx512f", "avx512vl", "avx512bw", "f16c")
	r := ledgertest.NewRand(13)
	for _, c := range []struct {
		narrow    func(float32) uint16
		f, exact  func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32)
		tolerance float64 // relative to max |output|
	}{
		{quant.Float32ToFP16, AttentionF16x4, AttentionF16, 1.0 / 1024},
		{quant.Float32ToBF16, AttentionBF16x4, AttentionBF16, 1.0 / 128},
	} {
		for _, s := range []struct{ heads, kvHeads, headDim, nCtx int }{
			{4, 1, 16, 1}, {4, 2, 32, 7}, {3, 1, 64, 130}, {24, 8, 128, 301}, {32, 8, 64, 64}, {4, 1, 20, 9},
		} {
			width, n := s.heads*s.headDim, s.nCtx*s.kvHeads*s.headDim
			q := ledgertest.Floats(r, width)
			k, v := make([]uint16, n), make([]uint16, n)
			for i, x := range ledgertest.Floats(r, 2*n) {
				if i < n {
					k[i] = c.narrow(x)
				} else {
					v[i-n] = c.narrow(x)
				}
			}
			scale := float32(1 / math.Sqrt(float64(s.headDim)))
			want := make([]float32, width)
			c.exact(want, q, k, v, s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
			buf, got := ledgertest.Guarded(width)
			c.f(got, q, k, v, s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
			ledgertest.CheckGuards(t, buf)
			var peak float64
			for _, w := range want {
				peak = max(peak, math.Abs(float64(w)))
			}
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= c.tolerance*peak) {
					t.Fatalf("%+v: output %d is %v, want %v (off by %.3g of the largest)", s, i, got[i], want[i], d/peak)
				}
			}
		}
	}
}

// The one-walk weighted sums (avx512-4x4-w1, -w1pf, avx512-gqa-4x4-w1) sum
// each output lane in the same order as the two-walk ones: the same bits as
// AttentionF16x4, AttentionBF16x4 and AttentionGQA4x4, with guards intact,
// over groups of 1 to 3 heads at head sizes of 128 and 256 (the three-head
// kernel), and groups and sizes that keep the two-walk sum.
func TestWeightedSumOneWalk(t *testing.T) {
	need(t, "avx512f", "avx512vl", "avx512bw", "f16c")
	r := ledgertest.NewRand(17)
	shapes := []struct{ heads, kvHeads, headDim, nCtx int }{
		{3, 1, 128, 1}, {3, 1, 128, 37}, {24, 8, 128, 301}, {2, 1, 128, 70}, {1, 1, 128, 5},
		{6, 2, 256, 33}, {4, 1, 128, 20}, {3, 1, 64, 9}, {8, 2, 128, 12}, {3, 1, 192, 17},
	}
	for _, c := range []struct {
		name      string
		narrow    func(float32) uint16
		widen     func(uint16) float32
		f, f1, f2 func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32)
	}{
		{"f16", quant.Float32ToFP16, quant.FP16ToFloat32, AttentionF16x4, AttentionF16x4W1, AttentionF16x4W1Pf},
		{"bf16", quant.Float32ToBF16, quant.BF16ToFloat32, AttentionBF16x4, AttentionBF16x4W1, AttentionBF16x4W1Pf},
	} {
		for _, s := range shapes {
			t.Run(fmt.Sprintf("%s/h%dkv%dd%dctx%d", c.name, s.heads, s.kvHeads, s.headDim, s.nCtx), func(t *testing.T) {
				width, n := s.heads*s.headDim, s.nCtx*s.kvHeads*s.headDim
				q := ledgertest.Floats(r, width)
				k, v := make([]uint16, n), make([]uint16, n)
				k32, v32 := make([]float32, n), make([]float32, n)
				for i, x := range ledgertest.Floats(r, 2*n) {
					if i < n {
						k[i] = c.narrow(x)
						k32[i] = c.widen(k[i])
					} else {
						v[i-n] = c.narrow(x)
						v32[i-n] = c.widen(v[i-n])
					}
				}
				scale := float32(1 / math.Sqrt(float64(s.headDim)))
				want := make([]float32, width)
				c.f(want, q, k, v, s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
				for _, f := range []func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32){c.f1, c.f2} {
					sameBitsGuarded(t, want, "", "the two-walk sum's", func(got []float32) {
						f(got, q, k, v, s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
					})
				}
				if c.name != "f16" {
					return
				}
				// The float32 cache's one-walk sum against its two-walk one.
				AttentionGQA4x4(want, q, k32, v32, s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
				sameBitsGuarded(t, want, "f32 cache: ", "the two-walk sum's", func(got []float32) {
					AttentionGQA4x4W1(got, q, k32, v32, s.heads, s.kvHeads, s.headDim, s.nCtx, scale)
				})
			})
		}
	}
}

// sameBitsGuarded runs f on a guarded output as long as want and fails t if
// it wrote past either end or if any output's bits differ from want's
// (reported as "<prefix>output i is got, <ref> want"): the bit-for-bit check
// the tests above make of each kernel against its reference.
func sameBitsGuarded(t *testing.T, want []float32, prefix, ref string, f func(got []float32)) {
	t.Helper()
	buf, got := ledgertest.Guarded(len(want))
	f(got)
	ledgertest.CheckGuards(t, buf)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%soutput %d is %v, %s %v", prefix, i, got[i], ref, want[i])
		}
	}
}
