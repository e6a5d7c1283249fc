package gounrolled

import "math"

// FP16ToFloat32 widens an IEEE half-precision value exactly, by table
// lookup (as ggml's ggml_table_f32_f16): 256 KiB built once at start.
func FP16ToFloat32(h uint16) float32 { return fp16Table[h] }

var fp16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = fp16Widen(uint16(i))
	}
	return &t
}()

// fp16Widen widens h by its bit fields.
func fp16Widen(h uint16) float32 {
	if exp := h >> 10 & 0x1f; exp-1 < 0x1e { // exponent 1..30
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)+0x1c000)<<13)
	}
	return fp16Special(h)
}

// fp16Special widens zeros, subnormals, infinities and NaNs.
func fp16Special(h uint16) float32 {
	sign := uint32(h>>15) << 31
	man := uint32(h) & 0x3ff
	switch {
	case h>>10&0x1f == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: normalise into a float32.
	e := uint32(113)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// Float32ToFP16 narrows f to half precision, rounding to nearest even as
// F16C's VCVTPS2PH (and ggml's scalar fallback) do.
func Float32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if man != 0 {
			return sign | 0x7e00 // ggml's canonical quiet NaN
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign // underflows to zero
		}
		man |= 0x800000
		shift := uint32(14 - e)
		half := man >> shift
		rem := man & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || rem == mid && half&1 == 1 {
			half++
		}
		return sign | uint16(half)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent, up to Inf: still correct
	}
	return sign | uint16(h)
}

// BF16ToFloat32 widens a bfloat16 value exactly.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
