package naive

import "github.com/damascus-llm/damascus/model/quant"

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
