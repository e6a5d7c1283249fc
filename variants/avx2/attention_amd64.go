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

// scratch holds a call's four heads' scores, queries and outputs: no
// allocation per token once it has grown.
var scratch = sync.Pool{New: func() any { return new([]float32) }}

// AttentionGQA is one query token's grouped-query attention (ledger.Attention)
// on AVX2: each KV head's query heads four at a time (the last four padded
// with zero queries whose results are dropped), so every cached key and
// value row is read once per four heads; scores, softmax (softmaxAVX2) and
// weighted sums in 8-lane FMA. A model without grouping (one query head a
// KV head) pays for four heads a pass.
func AttentionGQA(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 {
		return
	}
	if nCtx <= 0 {
		clear(out[:nHeads*headDim])
		return
	}
	stride := nKVHeads * headDim
	_, _, _, _ = out[nHeads*headDim-1], q[nHeads*headDim-1], k[nCtx*stride-1], v[nCtx*stride-1]
	buf := scratch.Get().(*[]float32)
	defer scratch.Put(buf)
	need := 4*nCtx + 8*headDim
	if cap(*buf) < need {
		*buf = make([]float32, max(need, 2*cap(*buf), 1024))
	}
	s := (*buf)[:need]
	p, q4, o4 := s[:4*nCtx], s[4*nCtx:4*nCtx+4*headDim], s[4*nCtx+4*headDim:]
	group := nHeads / nKVHeads
	for g := range nKVHeads {
		off := g * headDim
		for h0 := g * group; h0 < (g+1)*group; h0 += 4 {
			n := min(4, (g+1)*group-h0)
			copy(q4, q[h0*headDim:(h0+n)*headDim])
			clear(q4[n*headDim:])
			attnScores4AVX2(&p[0], &q4[0], &k[off], 4*stride, headDim, nCtx, nCtx, scale)
			for j := range n {
				softmaxAVX2(&p[j*nCtx], nCtx)
			}
			attnWsum4AVX2(&o4[0], &p[0], &v[off], 4*stride, headDim, nCtx, nCtx)
			copy(out[h0*headDim:(h0+n)*headDim], o4[:n*headDim])
		}
	}
}

// AttentionHalf returns the single-token attention over a 16-bit cache of
// type t (F16 or BF16) as stored (ledger.AttentionHalf), or nil for other
// types: AttentionGQA's passes with each key and value widened as it is
// loaded, and the roundings of llama.cpp's graph over such a cache (each
// query and each probability rounded to t), as the naive and AVX-512
// forms. Head sizes that are not a multiple of 16 widen the cache into
// scratch first and take the float32 passes.
func AttentionHalf(t quant.Type) ledger.AttentionHalf {
	var round func(float32) float32
	var widen func(uint16) float32
	switch t {
	case quant.F16:
		round, widen = quant.RoundFP16, quant.FP16ToFloat32
	case quant.BF16:
		round, widen = quant.RoundBF16, quant.BF16ToFloat32
	default:
		return nil
	}
	bf16 := t == quant.BF16
	return func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
		if nHeads <= 0 || headDim <= 0 {
			return
		}
		if nCtx <= 0 {
			clear(out[:nHeads*headDim])
			return
		}
		stride := nKVHeads * headDim
		_, _, _, _ = out[nHeads*headDim-1], q[nHeads*headDim-1], k[nCtx*stride-1], v[nCtx*stride-1]
		buf := scratch.Get().(*[]float32)
		defer scratch.Put(buf)
		need := 4*nCtx + 8*headDim
		direct := headDim%16 == 0
		if !direct {
			need += 2 * nCtx * stride
		}
		if cap(*buf) < need {
			*buf = make([]float32, max(need, 2*cap(*buf), 1024))
		}
		s := (*buf)[:need]
		p, q4, o4 := s[:4*nCtx], s[4*nCtx:4*nCtx+4*headDim], s[4*nCtx+4*headDim:4*nCtx+8*headDim]
		var k32, v32 []float32
		if !direct {
			k32, v32 = s[4*nCtx+8*headDim:][:nCtx*stride], s[4*nCtx+8*headDim+nCtx*stride:][:nCtx*stride]
			for i := range k32 {
				k32[i], v32[i] = widen(k[i]), widen(v[i])
			}
		}
		group := nHeads / nKVHeads
		for g := range nKVHeads {
			off := g * headDim
			for h0 := g * group; h0 < (g+1)*group; h0 += 4 {
				n := min(4, (g+1)*group-h0)
				for i, x := range q[h0*headDim : (h0+n)*headDim] {
					q4[i] = round(x)
				}
				clear(q4[n*headDim:])
				switch {
				case !direct:
					attnScores4AVX2(&p[0], &q4[0], &k32[off], 4*stride, headDim, nCtx, nCtx, scale)
				case bf16:
					attnScores4BF16AVX2(&p[0], &q4[0], &k[off], 2*stride, headDim, nCtx, nCtx, scale)
				default:
					attnScores4F16AVX2(&p[0], &q4[0], &k[off], 2*stride, headDim, nCtx, nCtx, scale)
				}
				for j := range n {
					row := p[j*nCtx : (j+1)*nCtx]
					softmaxAVX2(&row[0], nCtx)
					for i, x := range row {
						row[i] = round(x)
					}
				}
				switch {
				case !direct:
					attnWsum4AVX2(&o4[0], &p[0], &v32[off], 4*stride, headDim, nCtx, nCtx)
				case bf16:
					attnWsum4BF16AVX2(&o4[0], &p[0], &v[off], 2*stride, headDim, nCtx, nCtx)
				default:
					attnWsum4F16AVX2(&o4[0], &p[0], &v[off], 2*stride, headDim, nCtx, nCtx)
				}
				copy(out[h0*headDim:(h0+n)*headDim], o4[:n*headDim])
			}
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
	ledger.Register(ledger.Variant{Op: ledger.OpAttention, Name: "avx2-gqa", Family: ledger.FamilyAVX2,
		Features: []string{"avx2", "fma"}, Impl: ledger.Attention(AttentionGQA),
		Notes: "each KV head's query heads four at a time (zero-padded), every cached key and value row read once per four heads: " +
			"scores two positions a pass (8 FMA accumulators, VHADDPS reduction), softmaxAVX2 (Cephes expf, float64 sum), " +
			"weighted sums 16 output lanes of the four heads a pass; head tails under VMASKMOVPS lane masks"})
}
