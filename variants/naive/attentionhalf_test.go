package naive

import (
	"github.com/damascus-llm/damascus/quant"
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Reference is AttentionBatchBF16's arithmetic in float64 from the
// formula: q rounded to bf16, p = softmax(scale·q·k), p rounded to bf16,
// o = Σ p·v.
func bf16Reference(q, k, v []float32, ld, nTokens, nHeads, nKVHeads, hd, pos0 int, scale float64) []float64 {
	out := make([]float64, nTokens*ld)
	group, stride := nHeads/nKVHeads, nKVHeads*hd
	for j := range nTokens {
		n := pos0 + j + 1
		for h := range nHeads {
			off := (h / group) * hd
			s := make([]float64, n)
			mx := math.Inf(-1)
			for t := range n {
				for i := range hd {
					s[t] += float64(quant.RoundBF16(q[j*ld+h*hd+i])) * float64(k[t*stride+off+i])
				}
				s[t] *= scale
				mx = math.Max(mx, s[t])
			}
			var sum float64
			for t := range s {
				s[t] = math.Exp(s[t] - mx)
				sum += s[t]
			}
			for t := range s {
				p := float64(quant.RoundBF16(float32(s[t] / sum)))
				for i := range hd {
					out[j*ld+h*hd+i] += p * float64(v[t*stride+off+i])
				}
			}
		}
	}
	return out
}

// TestAttentionBatchBF16 checks the roundings: close to the formula with
// them, and measurably away from the float32 kernel without them (so a
// kernel that dropped a rounding fails).
func TestAttentionBatchBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ nTokens, nHeads, nKVHeads, hd, pos0 int }{
		{1, 2, 1, 8, 6}, {3, 4, 2, 16, 5}, {9, 3, 1, 64, 40}, {16, 6, 2, 32, 100},
	} {
		ld := c.nHeads * c.hd
		nPos := c.pos0 + c.nTokens
		q := make([]float32, c.nTokens*ld)
		k := make([]float32, nPos*c.nKVHeads*c.hd)
		v := make([]float32, len(k))
		for _, s := range [][]float32{q, k, v} {
			for i := range s {
				s[i] = float32(rng.NormFloat64())
			}
		}
		for i := range k { // the cache holds bf16 values
			k[i], v[i] = quant.RoundBF16(k[i]), quant.RoundBF16(v[i])
		}
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		got := make([]float32, len(q))
		AttentionBatchBF16(got, q, ld, k, v, c.nTokens, c.nHeads, c.nKVHeads, c.hd, c.pos0, scale)
		f32 := make([]float32, len(q))
		AttentionBatch(f32, q, ld, k, v, c.nTokens, c.nHeads, c.nKVHeads, c.hd, c.pos0, scale)
		want := bf16Reference(q, k, v, ld, c.nTokens, c.nHeads, c.nKVHeads, c.hd, c.pos0, float64(scale))
		var se, sf, rr float64
		for i, w := range want {
			se += (float64(got[i]) - w) * (float64(got[i]) - w)
			sf += (float64(f32[i]) - w) * (float64(f32[i]) - w)
			rr += w * w
		}
		if se/rr > 1e-10 {
			t.Errorf("%+v: NMSE %.3g against the bf16 formula, want ≤ 1e-10", c, se/rr)
		}
		if sf/rr < 1e-8 {
			t.Errorf("%+v: the float32 kernel is within %.3g of the bf16 formula: the test cannot see the roundings", c, sf/rr)
		}
	}
}
