package ledgertest

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// AttentionFunc is ledger.Attention's shape.
type AttentionFunc = func(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32)

// AttentionTolerance bounds |got-want| as a fraction of Σ_t p_t·|v_t|: the
// float32 scores carry a rounding error proportional to q·k's magnitude,
// which the exponential turns into a relative error of the weights.
const AttentionTolerance = 2e-5

// Attention checks f against float64 over head layouts with and without
// grouping, head sizes that leave every SIMD tail, and context lengths from
// one position up; guards surround the output.
func Attention(t *testing.T, f AttentionFunc) {
	r := NewRand(15)
	for _, c := range []struct{ heads, kvHeads, headDim, ctx int }{
		{1, 1, 1, 1}, {2, 1, 3, 5}, {4, 2, 16, 17}, {8, 8, 64, 33}, {6, 3, 18, 1},
		{24, 8, 128, 100}, {32, 8, 64, 257}, {3, 1, 33, 64}, {16, 2, 64, 40}, {10, 2, 16, 9},
	} {
		name := fmt.Sprintf("h%dkv%dd%dctx%d", c.heads, c.kvHeads, c.headDim, c.ctx)
		stride := c.kvHeads * c.headDim
		q := Floats(r, c.heads*c.headDim)
		k := Floats(r, c.ctx*stride)
		v := Floats(r, c.ctx*stride)
		scale := float32(1 / math.Sqrt(float64(c.headDim)))
		buf, out := Guarded(c.heads * c.headDim)
		f(out, q, k, v, c.heads, c.kvHeads, c.headDim, c.ctx, scale)
		CheckGuards(t, buf)
		group := c.heads / c.kvHeads
		for h := 0; h < c.heads; h++ {
			off := h / group * c.headDim
			s := make([]float64, c.ctx)
			max := math.Inf(-1)
			for p := range s {
				for i := 0; i < c.headDim; i++ {
					s[p] += float64(q[h*c.headDim+i]) * float64(k[p*stride+off+i])
				}
				s[p] *= float64(scale)
				max = math.Max(max, s[p])
			}
			var sum float64
			for p := range s {
				s[p] = math.Exp(s[p] - max)
				sum += s[p]
			}
			for i := 0; i < c.headDim; i++ {
				var want, mag float64
				for p := range s {
					x := float64(v[p*stride+off+i])
					want += s[p] / sum * x
					mag += s[p] / sum * math.Abs(x)
				}
				got := float64(out[h*c.headDim+i])
				if math.Abs(got-want) > AttentionTolerance*mag+1e-30 {
					t.Fatalf("%s: head %d [%d] = %v, want %v (err %.3g of %.3g)", name, h, i, got, want,
						math.Abs(got-want)/mag, mag)
				}
			}
		}
		// A NaN in the last head's query (damaged weights upstream) must
		// reach that head's output, not vanish in the softmax.
		q[len(q)-1] = float32(math.NaN())
		f(out, q, k, v, c.heads, c.kvHeads, c.headDim, c.ctx, scale)
		if !slices.ContainsFunc(out[len(out)-c.headDim:], func(x float32) bool { return math.IsNaN(float64(x)) }) {
			t.Fatalf("%s: a NaN query left its head's output finite", name)
		}
	}
}

// BenchAttention times f at the 1B and 3B head layouts over several
// context lengths, reporting the K/V bytes read per second as GB/s.
func BenchAttention(b *testing.B, variant string, f AttentionFunc) {
	r := NewRand(16)
	for _, c := range []struct{ heads, kvHeads, headDim int }{{32, 8, 64}, {24, 8, 128}} {
		for _, ctx := range []int{256, 1024, 4096} {
			stride := c.kvHeads * c.headDim
			q, k, v := Floats(r, c.heads*c.headDim), Floats(r, ctx*stride), Floats(r, ctx*stride)
			out := make([]float32, c.heads*c.headDim)
			scale := float32(1 / math.Sqrt(float64(c.headDim)))
			name := fmt.Sprintf("variant=%s/shape=h%dkv%dd%dctx%d", variant, c.heads, c.kvHeads, c.headDim, ctx)
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					f(out, q, k, v, c.heads, c.kvHeads, c.headDim, ctx, scale)
				}
				b.ReportMetric(float64(8*ctx*stride)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
