package llama

import "math"

// ropeAngles fills cos and sin (HeadDim/2 values) for position pos:
// θ_i = pos · freqScale · base^(−2i/HeadDim) / factor_i, as ggml_rope_ext
// computes it with freq_factors and no YaRN extrapolation. Computed in
// float64 and rounded once.
func (m *Model) ropeAngles(cos, sin []float32, pos int) {
	c := m.Config
	half := c.HeadDim / 2
	for i := range half {
		theta := float64(pos) * float64(c.RopeFreqScale) *
			math.Pow(float64(c.RopeBase), -2*float64(i)/float64(c.HeadDim))
		if m.FreqFactors != nil {
			theta /= float64(m.FreqFactors[i])
		}
		s, co := math.Sincos(theta)
		cos[i], sin[i] = float32(co), float32(s)
	}
}

// LLM_ARCH_LLAMA uses LLAMA_ROPE_TYPE_NORM (llama-model.cpp llama_model_rope_type):
// adjacent pairs (x[2i], x[2i+1]) rotate together. The GGUF converter permutes
// the Hugging Face Q/K rows so this layout is right for GGUF files.
const ropeNeoX = false
