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
	if nTokens <= 0 {
		return
	}
	buf := scores.Get().(*[]float32)
	defer scores.Put(buf)
	n := pos0 + nTokens
	if cap(*buf) < n+headDim {
		*buf = make([]float32, n+headDim)
	}
	qh := (*buf)[n : n+headDim]
	group, stride := nHeads/nKVHeads, nKVHeads*headDim
	for j := range nTokens {
		p := (*buf)[:pos0+j+1]
		for h := range nHeads {
			for i, x := range q[j*ld+h*headDim : j*ld+(h+1)*headDim] {
				qh[i] = roundBF16(x)
			}
			off := (h / group) * headDim
			for t := range p {
				kt := k[t*stride+off : t*stride+off+headDim]
				var s float64
				for i, qv := range qh {
					s += float64(qv * kt[i])
				}
				p[t] = float32(s) * scale
			}
			Softmax(p)
			oh := out[j*ld+h*headDim : j*ld+(h+1)*headDim]
			clear(oh)
			for t, pt := range p {
				pt = roundBF16(pt)
				vt := v[t*stride+off : t*stride+off+headDim]
				for i, vv := range vt {
					oh[i] += pt * vv
				}
			}
		}
	}
}
