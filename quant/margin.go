package quant

import "math"

// RoundingMargin reports how near the quantization of x to activation type
// t comes to a rounding boundary: the smallest distance, in quantization
// steps, between a value's scaled position (x·iscale, as Quantize computes
// it) and the midpoint between two codes, with the index of that value.
// A value at a margin of 0 sits exactly on a tie, where a perturbation of
// one ulp (a sum taken in another order) changes its code. ok is false for
// types whose rounding this does not model (only Q8_K, Q8_0 and Q8_1 are).
func RoundingMargin(t Type, x []float32) (margin float32, index int, ok bool) {
	var block int
	var scaleOf func(b []float32) float32
	switch t {
	case Q8_K:
		block = QK_K
		scaleOf = func(b []float32) float32 {
			if maxv, amax := absMax(b); amax != 0 {
				return -127 / maxv
			}
			return 0
		}
	case Q8_0, Q8_1:
		block = 32
		scaleOf = func(b []float32) float32 {
			_, amax := absMax(b)
			return inverse(amax / 127)
		}
	default:
		return 0, -1, false
	}
	if len(x)%block != 0 {
		return 0, -1, false
	}
	margin, index = float32(math.Inf(1)), -1
	for b0 := 0; b0 < len(x); b0 += block {
		iscale := scaleOf(x[b0 : b0+block])
		if iscale == 0 {
			continue
		}
		for j, v := range x[b0 : b0+block] {
			f := float32(iscale * v) // as Quantize rounds it: a float32 product, not fused
			fr := f - float32(math.Floor(float64(f)))
			if m := abs32(fr - 0.5); m < margin {
				margin, index = m, b0+j
			}
		}
	}
	return margin, index, true
}
