//go:build !noasm

package avx512

import (
	"sync"

	"github.com/damascus-llm/damascus/ledger"
)

//go:noescape
func attnScoresAVX512(p, q, k *float32, stride, headDim, n int, scale float32)

//go:noescape
func attnWeightedSumAVX512(out, p, v *float32, stride, headDim, n int)

// scoreBufs reuses score rows across calls: no allocation per token.
var scoreBufs = sync.Pool{New: func() any { return new([]float32) }}

// Attention computes one query token's grouped-query attention over nCtx
// cached positions (ledger.Attention's contract): per query head, the
// scaled scores against every cached key, their softmax, and the weighted
// sum of the cached values, each step in AVX-512.
func Attention(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 {
		return
	}
	if nCtx <= 0 {
		clear(out[:nHeads*headDim])
		return
	}
	stride := nKVHeads * headDim
	_, _, _, _ = out[nHeads*headDim-1], q[nHeads*headDim-1], k[nCtx*stride-1], v[nCtx*stride-1]
	buf := scoreBufs.Get().(*[]float32)
	defer scoreBufs.Put(buf)
	if cap(*buf) < nCtx {
		*buf = make([]float32, nCtx)
	}
	p := (*buf)[:nCtx]
	group := nHeads / nKVHeads
	for h := 0; h < nHeads; h++ {
		off := (h / group) * headDim
		attnScoresAVX512(&p[0], &q[h*headDim], &k[off], 4*stride, headDim, nCtx, scale)
		softmaxAVX512(&p[0], nCtx)
		attnWeightedSumAVX512(&out[h*headDim], &p[0], &v[off], 4*stride, headDim, nCtx)
	}
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.OpAttention, Name: "avx512", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Impl: ledger.Attention(Attention),
		Notes: "per query head: masked-FMA scores, the avx512 softmax, weighted sum 16 lanes at a time over all positions; K/V reread per head of a group"})
}
