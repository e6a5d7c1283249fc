package naive

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// AttentionBatchBF16 is AttentionBatch with the roundings of llama.cpp's
// CPU graph over a bf16 KV cache (no flash attention): each query rounded
// to bf16 (BF16's vec_dot_type) for K·q, the scores scaled and softmaxed in
// float32, the probabilities rounded to bf16 for the product with V. Keys
// and values are used as given: the engine passes the cache's bf16 values,
// which float32 holds exactly.
func AttentionBatchBF16(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionBatch(quant.RoundBF16, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchF16 is AttentionBatchBF16 for an F16 cache: queries (F16's
// vec_dot_type) and probabilities rounded to IEEE half.
func AttentionBatchF16(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionBatch(quant.RoundFP16, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionHalf returns the single-token attention over a 16-bit cache of
// type t (F16 or BF16) as stored (ledger.AttentionHalf): the keys and
// values widened exactly, then attentionBatch's arithmetic with t's
// roundings for the one token at position nCtx-1. Nil for other types.
func AttentionHalf(t quant.Type) ledger.AttentionHalf {
	round, widen := quant.RoundFP16, quant.FP16ToFloat32
	switch t {
	case quant.F16:
	case quant.BF16:
		round, widen = quant.RoundBF16, quant.BF16ToFloat32
	default:
		return nil
	}
	return func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
		n := nCtx * nKVHeads * headDim
		k32, v32 := make([]float32, n), make([]float32, n)
		for i := range n {
			k32[i], v32[i] = widen(k[i]), widen(v[i])
		}
		attentionBatch(round, out, q, nHeads*headDim, k32, v32, 1, nHeads, nKVHeads, headDim, nCtx-1, scale)
	}
}
