package naive

import "github.com/damascus-llm/damascus/model/quant"

// roundBF16 is x rounded to bfloat16 (to nearest even), as a float32.
func roundBF16(x float32) float32 { return quant.BF16ToFloat32(quant.Float32ToBF16(x)) }

// AttentionBatchBF16 is AttentionBatch with the roundings of llama.cpp's
// CPU graph over a bf16 KV cache (no flash attention): each query rounded
// to bf16 (BF16's vec_dot_type) for K·q, the scores scaled and softmaxed in
// float32, the probabilities rounded to bf16 for the product with V. Keys
// and values are used as given: the engine passes the cache's bf16 values,
// which float32 holds exactly.
func AttentionBatchBF16(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionBatch(roundBF16, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// roundF16 is x rounded to IEEE half (to nearest even), as a float32.
func roundF16(x float32) float32 { return quant.FP16ToFloat32(quant.Float32ToFP16(x)) }

// AttentionBatchF16 is AttentionBatchBF16 for an F16 cache: queries (F16's
// vec_dot_type) and probabilities rounded to IEEE half.
func AttentionBatchF16(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionBatch(roundF16, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}
