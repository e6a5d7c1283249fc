//go:build !noasm

package avx2

import (
	"sync"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// attnScores4AVX2 (attention_amd64.s): p[j·ldp+t] = scale · q_j·k_t for
// j < 4 and t < n, q_j at q + j·headDim floats, k_t at k + t·stride bytes.
//
//go:noescape
func attnScores4AVX2(p, q, k *float32, stride, headDim, n, ldp int, scale float32)

// attnWsum4AVX2 (attention_amd64.s): out_j = Σ_t p[j·ldp+t]·v_t for j < 4,
// out_j at out + j·headDim floats, v_t at v + t·stride bytes.
//
//go:noescape
func attnWsum4AVX2(out, p, v *float32, stride, headDim, n, ldp int)

// The 16-bit cache's passes (attention_amd64.s): as attnScores4AVX2 and
// attnWsum4AVX2 with each key and value widened as it is loaded; head
// sizes a multiple of 16.
//
//go:noescape
func attnScores4F16AVX2(p, q *float32, k *uint16, stride, headDim, n, ldp int, scale float32)

//go:noescape
func attnWsum4F16AVX2(out, p *float32, v *uint16, stride, headDim, n, ldp int)

//go:noescape
func attnScores4BF16AVX2(p, q *float32, k *uint16, stride, headDim, n, ldp int, scale float32)

//go:noescape
func attnWsum4BF16AVX2(out, p *float32, v *uint16, stride, headDim, n, ldp int)

// scratch holds a call's four heads' scores, queries and outputs (and a
// widened 16-bit cache where its head size needs it): no allocation per
// token once it has grown.
var scratch = sync.Pool{New: func() any { return new([]float32) }}

// cache is what a call's keys and values are: float32, or 16-bit values
// as stored, widened by the passes as they load them.
type cache int

const (
	cacheF32 cache = iota
	cacheF16
	cacheBF16
)

// gqa is the loop of every attention here: each KV head's query heads four
// at a time (the last four padded with zero queries whose results are
// dropped), so every cached key and value row is read once per four heads;
// scores, softmax (softmaxAVX2), weighted sums. With round, each query is
// rounded before the scores and each probability after the softmax (a
// 16-bit cache's arithmetic in llama.cpp's graph). Keys and values are k32,
// v32 for cacheF32, else k16, v16.
func gqa(c cache, round func(float32) float32, out, q, k32, v32 []float32, k16, v16 []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 {
		return
	}
	if nCtx <= 0 {
		clear(out[:nHeads*headDim])
		return
	}
	stride := nKVHeads * headDim
	_, _ = out[nHeads*headDim-1], q[nHeads*headDim-1]
	if c == cacheF32 {
		_, _ = k32[nCtx*stride-1], v32[nCtx*stride-1]
	} else {
		_, _ = k16[nCtx*stride-1], v16[nCtx*stride-1]
	}
	buf := scratch.Get().(*[]float32)
	defer scratch.Put(buf)
	need := 4*nCtx + 8*headDim
	widen := c != cacheF32 && headDim%16 != 0 // the 16-bit passes take multiples of 16
	if widen {
		need += 2 * nCtx * stride
	}
	if cap(*buf) < need {
		*buf = make([]float32, max(need, 2*cap(*buf), 1024))
	}
	s := (*buf)[:need]
	p, q4, o4 := s[:4*nCtx], s[4*nCtx:4*nCtx+4*headDim], s[4*nCtx+4*headDim:4*nCtx+8*headDim]
	if widen {
		w := quant.FP16ToFloat32
		if c == cacheBF16 {
			w = quant.BF16ToFloat32
		}
		k32, v32 = s[4*nCtx+8*headDim:][:nCtx*stride], s[4*nCtx+8*headDim+nCtx*stride:][:nCtx*stride]
		for i := range k32 {
			k32[i], v32[i] = w(k16[i]), w(v16[i])
		}
		c = cacheF32
	}
	group := nHeads / nKVHeads
	for g := range nKVHeads {
		off := g * headDim
		for h0 := g * group; h0 < (g+1)*group; h0 += 4 {
			n := min(4, (g+1)*group-h0)
			copy(q4, q[h0*headDim:(h0+n)*headDim])
			clear(q4[n*headDim:])
			if round != nil {
				for i, x := range q4[:n*headDim] {
					q4[i] = round(x)
				}
			}
			switch c {
			case cacheF32:
				attnScores4AVX2(&p[0], &q4[0], &k32[off], 4*stride, headDim, nCtx, nCtx, scale)
			case cacheF16:
				attnScores4F16AVX2(&p[0], &q4[0], &k16[off], 2*stride, headDim, nCtx, nCtx, scale)
			default:
				attnScores4BF16AVX2(&p[0], &q4[0], &k16[off], 2*stride, headDim, nCtx, nCtx, scale)
			}
			for j := range n {
				row := p[j*nCtx : (j+1)*nCtx]
				softmaxAVX2(&row[0], nCtx)
				if round != nil {
					for i, x := range row {
						row[i] = round(x)
					}
				}
			}
			switch c {
			case cacheF32:
				attnWsum4AVX2(&o4[0], &p[0], &v32[off], 4*stride, headDim, nCtx, nCtx)
			case cacheF16:
				attnWsum4F16AVX2(&o4[0], &p[0], &v16[off], 2*stride, headDim, nCtx, nCtx)
			default:
				attnWsum4BF16AVX2(&o4[0], &p[0], &v16[off], 2*stride, headDim, nCtx, nCtx)
			}
			copy(out[h0*headDim:(h0+n)*headDim], o4[:n*headDim])
		}
	}
}

// AttentionGQA is one query token's grouped-query attention
// (ledger.Attention) on AVX2, through gqa: scores two positions a pass,
// weighted sums 16 lanes of four heads a pass, in 8-lane FMA. A model
// without grouping (one query head a KV head) pays for four heads a pass.
func AttentionGQA(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	gqa(cacheF32, nil, out, q, k, v, nil, nil, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionHalf returns the single-token attention over a 16-bit cache of
// type t (F16 or BF16) as stored (ledger.AttentionHalf), or nil for other
// types: gqa with each key and value widened as it is loaded and the
// roundings of llama.cpp's graph over such a cache (each query and each
// probability rounded to t), as the naive and AVX-512 forms.
func AttentionHalf(t quant.Type) ledger.AttentionHalf {
	c, round := cacheF16, quant.RoundFP16
	switch t {
	case quant.F16:
	case quant.BF16:
		c, round = cacheBF16, quant.RoundBF16
	default:
		return nil
	}
	return func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
		gqa(c, round, out, q, nil, nil, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
	}
}

// AttentionBatchRounded returns the batched attention (ledger.AttentionBatch)
// with round's roundings (quant.RoundFP16 or RoundBF16: a 16-bit cache's
// prefill, its values given widened): gqa for each token over its causal
// history.
func AttentionBatchRounded(round func(float32) float32) ledger.AttentionBatch {
	return func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
		width, stride := nHeads*headDim, nKVHeads*headDim
		for j := range nTokens {
			ctx := pos0 + j + 1
			gqa(cacheF32, round, out[j*ld:j*ld+width], q[j*ld:j*ld+width], k[:ctx*stride], v[:ctx*stride], nil, nil,
				nHeads, nKVHeads, headDim, ctx, scale)
		}
	}
}

func init() {
	for _, t := range []quant.Type{quant.F16, quant.BF16} {
		ledger.Register(ledger.Variant{Op: ledger.AttentionHalfOp(t), Name: "avx2-gqa", Family: ledger.FamilyAVX2,
			Features: []string{"avx2", "fma", "f16c"}, Impl: AttentionHalf(t),
			Notes: "attention/f32's avx2-gqa passes with each cached key and value widened as it is loaded (F16 by VCVTPH2PS, BF16 by VPMOVZXWD and a shift; " +
				"head sizes not a multiple of 16 widen the cache into scratch first), each query and probability rounded to the cache's type in Go, as llama.cpp's graph over such a cache"})
	}
	for _, v := range []struct {
		name  string
		prec  ledger.Precision
		round func(float32) float32
	}{{"avx2-f16", ledger.PrecisionF16, quant.RoundFP16}, {"avx2-bf16", ledger.PrecisionBF16, quant.RoundBF16}} {
		ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: v.name, Family: ledger.FamilyAVX2,
			Features: []string{"avx2", "fma"}, Precision: v.prec, Impl: AttentionBatchRounded(v.round),
			Notes: "attention:avx2-gqa for each token of the batch with the roundings of llama.cpp's graph over a " + string(v.prec) +
				" KV cache (queries rounded unscaled, scale on the float32 scores, probabilities normalized then rounded): that cache's prefill on CPUs without AVX-512"})
	}
	ledger.Register(ledger.Variant{Op: ledger.OpAttention, Name: "avx2-gqa", Family: ledger.FamilyAVX2,
		Features: []string{"avx2", "fma"}, Impl: ledger.Attention(AttentionGQA),
		Notes: "each KV head's query heads four at a time (zero-padded), every cached key and value row read once per four heads: " +
			"scores two positions a pass (8 FMA accumulators, VHADDPS reduction), softmaxAVX2 (Cephes expf, float64 sum), " +
			"weighted sums 16 output lanes of the four heads a pass; head tails under VMASKMOVPS lane masks"})
}
