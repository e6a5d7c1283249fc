package ledgertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// AttentionBatchFunc is ledger.AttentionBatch's shape.
type AttentionBatchFunc = func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32)

// attentionBatchCase is one layout of a causal batch.
type attentionBatchCase struct{ heads, kvHeads, headDim, tokens, pos0, gap int }

func (c attentionBatchCase) String() string {
	return fmt.Sprintf("h%dkv%dd%dn%dpos%dgap%d", c.heads, c.kvHeads, c.headDim, c.tokens, c.pos0, c.gap)
}

// attentionBatchCases: every batch size from 1 to 9 at the first position
// and later ones, over head layouts with and without grouping (groups of 1,
// 3, 4, 5 and 16 query heads, so that 16-row blocks split tokens and KV
// groups every way), head sizes on and off the 16-lane grid, with and
// without a gap between the rows of q and out; then the 1B and 3B layouts
// at batches that leave every remainder.
func attentionBatchCases() []attentionBatchCase {
	var cs []attentionBatchCase
	layouts := [][3]int{{1, 1, 1}, {2, 1, 3}, {4, 2, 16}, {6, 2, 18}, {3, 3, 33}, {10, 2, 20}, {16, 1, 8}, {8, 2, 65}}
	for i, l := range layouts {
		for n := 1; n <= 9; n++ {
			for _, pos0 := range []int{0, 1 + (i+n)%7, 23 + 5*i} {
				cs = append(cs, attentionBatchCase{l[0], l[1], l[2], n, pos0, (i + n) % 2 * 3})
			}
		}
	}
	return append(cs,
		attentionBatchCase{24, 8, 128, 17, 100, 0},
		attentionBatchCase{24, 8, 128, 6, 0, 5},
		attentionBatchCase{32, 8, 64, 21, 50, 0},
		attentionBatchCase{32, 8, 64, 4, 7, 1},
		attentionBatchCase{3, 1, 128, 11, 250, 0}, // one KV head of 3B, as the engine calls it
		attentionBatchCase{4, 1, 64, 13, 300, 0},  // one KV head of 1B
	)
}

// batchInputs makes case c's queries (rows ld apart, NaN in the gaps) and
// its cache's keys and values, each passed through round, with NaN rows
// past the cache's end (beyond the slices' capacity).
func batchInputs(r *rand.Rand, c attentionBatchCase, round func(float32) float32) (q, k, v []float32) {
	nan := float32(math.NaN())
	width, ld := c.heads*c.headDim, c.heads*c.headDim+c.gap
	stride, nPos := c.kvHeads*c.headDim, c.pos0+c.tokens
	q = make([]float32, (c.tokens-1)*ld+width)
	for i := range q {
		q[i] = nan
	}
	for j := range c.tokens {
		copy(q[j*ld:], Floats(r, width))
	}
	kv := func() []float32 {
		x := append(Floats(r, nPos*stride), make([]float32, 2*stride+16)...)
		for i := range x {
			if i < nPos*stride {
				x[i] = round(x[i])
			} else {
				x[i] = nan
			}
		}
		return x[: nPos*stride : nPos*stride]
	}
	return q, kv(), kv()
}

// AttentionBatch checks f against float64 over attentionBatchCases. Guards
// surround out and fill the gaps between its rows (which must stay
// untouched); the gaps of q hold NaN and K/V are followed by NaN rows, so a
// kernel that reads either shows it in its output. Each output must match
// the per-token causal attention in float64 within AttentionTolerance of
// Σ_t p_t·|v_t| plus the bound of float32 score rounding (attentionHead).
func AttentionBatch(t *testing.T, f AttentionBatchFunc) {
	r := NewRand(17)
	for _, c := range attentionBatchCases() {
		width := c.heads * c.headDim
		ld := width + c.gap
		stride := c.kvHeads * c.headDim
		q, k, v := batchInputs(r, c, func(x float32) float32 { return x })
		scale := float32(1 / math.Sqrt(float64(c.headDim)))
		buf, out := Guarded((c.tokens-1)*ld + width)
		f(out, q, ld, k, v, c.tokens, c.heads, c.kvHeads, c.headDim, c.pos0, scale)
		CheckGuards(t, buf)
		for j := range c.tokens {
			for i := width; i < ld && j < c.tokens-1; i++ {
				if math.Float32bits(out[j*ld+i]) != math.Float32bits(Guard) {
					t.Fatalf("%s: wrote %v into the gap after token %d (element %d)", c, out[j*ld+i], j, i)
				}
			}
			ctx := c.pos0 + j + 1
			for h := range c.heads {
				off := h / (c.heads / c.kvHeads) * c.headDim
				want, bound := attentionHead(q[j*ld+h*c.headDim:j*ld+(h+1)*c.headDim], k, v, stride, off, ctx,
					float64(scale), AttentionTolerance)
				for i := range c.headDim {
					got := float64(out[j*ld+h*c.headDim+i])
					if !(math.Abs(got-want[i]) <= bound[i]+1e-30) {
						t.Fatalf("%s: token %d (sees %d positions) head %d [%d] = %v, want %v (error %.3g, bound %.3g)",
							c, j, ctx, h, i, got, want[i], math.Abs(got-want[i]), bound[i])
					}
				}
			}
		}
	}
}

// attentionHead is one query head's attention over the first ctx
// positions in float64: the output and, per element, the error a correct
// float32 kernel may make, tolerance·Σ_t p_t·|v_t| plus the effect of the
// rounding of its scores. A float32 dot product of headDim terms, in any
// summation order and scaled, is within γ = (headDim+2)·2⁻²⁴ of
// Σ_i|q_i·k_i|·scale (Higham's bound); to first order, score errors e_t
// move output i by Σ_t p_t·(e_t − ē)·v_t,i, at most Σ_t p_t·(δ_t + δ̄)·|v_t,i|
// with δ_t the bound on |e_t|. Test vectors carry ×50 outliers, so scores
// reach the hundreds and that term is often the larger; without it the
// promoted single-token kernel fails a pure 2e-5 bound on random data.
func attentionHead(q, k, v []float32, stride, off, ctx int, scale, tolerance float64) (want, bound []float64) {
	hd := len(q)
	const u = 1.0 / (1 << 24)
	gamma := float64(hd+2) * u * math.Abs(scale)
	s := make([]float64, ctx)
	delta := make([]float64, ctx)
	maxs := math.Inf(-1)
	for p := range s {
		var abs float64
		for i := range hd {
			x := float64(q[i]) * float64(k[p*stride+off+i])
			s[p] += x
			abs += math.Abs(x)
		}
		s[p] *= scale
		delta[p] = gamma * abs
		maxs = math.Max(maxs, s[p])
	}
	var sum, dbar float64
	for p := range s {
		s[p] = math.Exp(s[p] - maxs)
		sum += s[p]
	}
	for p := range s {
		s[p] /= sum
		dbar += s[p] * delta[p]
	}
	want, bound = make([]float64, hd), make([]float64, hd)
	for p, w := range s {
		for i := range hd {
			x := float64(v[p*stride+off+i])
			want[i] += w * x
			bound[i] += w * math.Abs(x) * (tolerance + delta[p] + dbar)
		}
	}
	return want, bound
}

// BenchAttentionBatch times f as the engine calls it during prefill: for
// each KV head of the 1B and 3B layouts, one call with nKVHeads = 1 over
// that head's contiguous [position][headDim] cache, its query heads' rows
// qd = heads·headDim apart; a batch of 64 tokens at several positions. It
// reports the attention GFLOP/s (4·headDim per query head and visible
// position).
func BenchAttentionBatch(b *testing.B, variant string, f AttentionBatchFunc) {
	r := NewRand(18)
	for _, c := range []struct{ heads, kvHeads, headDim int }{{32, 8, 64}, {24, 8, 128}} {
		for _, pos0 := range []int{0, 960} {
			const tokens = 64
			benchAttentionBatch(b, r, variant, f, c.heads, c.kvHeads, c.headDim, tokens, pos0)
		}
	}
}

func benchAttentionBatch(b *testing.B, r *rand.Rand, variant string, f AttentionBatchFunc, heads, kvHeads, headDim, tokens, pos0 int) {
	group, qd, nPos := heads/kvHeads, heads*headDim, pos0+tokens
	q := Floats(r, tokens*qd)
	out := make([]float32, tokens*qd)
	k, v := Floats(r, kvHeads*nPos*headDim), Floats(r, kvHeads*nPos*headDim)
	scale := float32(1 / math.Sqrt(float64(headDim)))
	pairs := float64(tokens*pos0) + float64(tokens*(tokens+1)/2)
	name := fmt.Sprintf("variant=%s/shape=h%dkv%dd%dn%dpos%d", variant, heads, kvHeads, headDim, tokens, pos0)
	b.Run(name, func(b *testing.B) {
		for b.Loop() {
			for h := range kvHeads {
				base := h * nPos * headDim
				f(out[h*group*headDim:], q[h*group*headDim:], qd, k[base:base+nPos*headDim], v[base:base+nPos*headDim],
					tokens, group, 1, headDim, pos0, scale)
			}
		}
		b.ReportMetric(float64(heads)*pairs*float64(4*headDim)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// AttentionBatchBF16 checks f, a kernel with the roundings of llama.cpp's
// graph over a bf16 KV cache, against ref (naive.AttentionBatchBF16).
func AttentionBatchBF16(t *testing.T, f, ref AttentionBatchFunc) {
	AttentionBatchHalf(t, f, ref, 1e-5, quant.RoundBF16)
}

// AttentionBatchF16 is AttentionBatchBF16 for an F16 cache.
func AttentionBatchF16(t *testing.T, f, ref AttentionBatchFunc) {
	AttentionBatchHalf(t, f, ref, 1e-6, quant.RoundFP16)
}

// AttentionBatchHalf checks f, a kernel with the roundings of llama.cpp's
// graph over a 16-bit KV cache, against ref (the same arithmetic in scalar
// Go) over attentionBatchCases, keys and values passed through round as
// the cache holds them, with attentionBatchCase's guards,
// NaN gaps and NaN rows past the cache. The two may differ by float32
// summation order and, rarely, by a probability rounded the other way (one
// step of the type): every output must be within 2⁻⁷·max|v| of ref, and at
// most 0.2% of them more than farther·max|v| away (10⁻⁵ for bf16, 10⁻⁶ for
// f16). A kernel that skips a rounding (or scales the queries before
// rounding them) is off by about the type's rounding nearly everywhere and
// fails the second.
func AttentionBatchHalf(t *testing.T, f, ref AttentionBatchFunc, farther float64, round func(float32) float32) {
	r := NewRand(19)
	var outputs, far int
	for _, c := range attentionBatchCases() {
		width := c.heads * c.headDim
		ld := width + c.gap
		q, k, v := batchInputs(r, c, round)
		var maxV float64
		for _, x := range v {
			maxV = max(maxV, math.Abs(float64(x)))
		}
		scale := float32(1 / math.Sqrt(float64(c.headDim)))
		buf, out := Guarded((c.tokens-1)*ld + width)
		f(out, q, ld, k, v, c.tokens, c.heads, c.kvHeads, c.headDim, c.pos0, scale)
		CheckGuards(t, buf)
		want := make([]float32, len(out))
		ref(want, q, ld, k, v, c.tokens, c.heads, c.kvHeads, c.headDim, c.pos0, scale)
		for j := range c.tokens {
			for i := range min(ld, len(out)-j*ld) {
				got := out[j*ld+i]
				if i >= width {
					if math.Float32bits(got) != math.Float32bits(Guard) {
						t.Fatalf("%s: wrote %v into the gap after token %d (element %d)", c, got, j, i)
					}
					continue
				}
				d := math.Abs(float64(got) - float64(want[j*ld+i]))
				if !(d <= maxV/128) {
					t.Fatalf("%s: token %d element %d = %v, reference %v (more than 2⁻⁷ of max|v| = %.3g apart)",
						c, j, i, got, want[j*ld+i], maxV)
				}
				outputs++
				if d > farther*maxV {
					far++
				}
			}
		}
	}
	if far*500 > outputs {
		t.Errorf("%d of %d outputs more than %g·max|v| from the reference: roundings differ", far, outputs, farther)
	}
	t.Logf("%d of %d outputs more than %g·max|v| from the reference", far, outputs, farther)
}
