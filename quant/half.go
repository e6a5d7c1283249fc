package quant

import "math"

// FP16ToFloat32 converts an IEEE half-precision value to float32. The
// conversion is exact; a NaN keeps its payload and comes back quiet, as the
// x86 float path ggml runs on produces it.
func FP16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f && mant == 0:
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// A subnormal half is mant·2⁻²⁴, exactly representable as float32.
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// Float32ToFP16 converts f to half precision, rounding to nearest even, as
// ggml's ggml_compute_fp32_to_fp16 does: values beyond the half range become
// infinities, and every NaN becomes the quiet NaN 0x7e00 with f's sign.
func Float32ToFP16(f float32) uint16 {
	const scaleToInf = 0x1.0p+112
	const scaleToZero = 0x1.0p-110
	// The products are rounded separately on purpose: the first may overflow to
	// infinity, which is how out-of-range values saturate.
	base := float32(float32(abs32(f)*scaleToInf) * scaleToZero)

	w := math.Float32bits(f)
	shl1w := w + w
	sign := w & 0x80000000
	bias := shl1w & 0xff000000
	if bias < 0x71000000 {
		bias = 0x71000000
	}
	base = math.Float32frombits(bias>>1+0x07800000) + base
	bits := math.Float32bits(base)
	expBits := (bits >> 13) & 0x00007c00
	mantBits := bits & 0x00000fff
	nonsign := expBits + mantBits
	if shl1w > 0xff000000 {
		nonsign = 0x7e00
	}
	return uint16(sign>>16 | nonsign)
}

// BF16ToFloat32 converts a bfloat16 value (the high half of a float32) to float32.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 converts f to bfloat16 rounding to nearest even, as ggml's
// ggml_compute_fp32_to_bf16 does: subnormals are kept, and a NaN is truncated
// and forced quiet.
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}

// RoundBF16 is f rounded to bfloat16 (to nearest even) as a float32: what a
// bf16 KV cache or vec_dot_type keeps of it.
func RoundBF16(f float32) float32 { return BF16ToFloat32(Float32ToBF16(f)) }

// RoundFP16 is f rounded to IEEE half (to nearest even) as a float32.
func RoundFP16(f float32) float32 { return FP16ToFloat32(Float32ToFP16(f)) }

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ 0x80000000) }
