package naive

import (
	"encoding/binary"
	"math"

	"github.com/damascus-llm/damascus/quant"
)

// nearestInt rounds to nearest, ties to even, exactly as ggml's nearest_int:
// adding 1.5·2²³ leaves the rounded integer in the low mantissa bits. Valid
// for |f| ≤ 2²²−1, which quantization guarantees.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912 // float32(f) keeps a product argument from fusing (arm64 FMADD)
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// QuantizeQ8K writes x into Q8_K blocks as ggml's quantize_row_q8_K_ref does:
// the value of largest magnitude maps to −127 (its sign kept in d),
// d = 1/iscale as float32, and the bsums hold the sums of each 16 quants. An
// all-zero block gets d = 0, zero quants and zero sums (ggml leaves the sums
// unwritten there).
func QuantizeQ8K(dst []byte, x []float32) {
	for b := range len(x) / quant.QK_K {
		xb := x[b*quant.QK_K : (b+1)*quant.QK_K]
		y := dst[b*292 : b*292+292]
		var max, amax float32
		for _, v := range xb {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, max = a, v
			}
		}
		if amax == 0 {
			clear(y)
			continue
		}
		iscale := -127 / max
		qs := y[4 : 4+quant.QK_K]
		for j, v := range xb {
			qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
		}
		for j := range quant.QK_K / 16 {
			var s int16
			for _, q := range qs[16*j : 16*j+16] {
				s += int16(int8(q))
			}
			binary.LittleEndian.PutUint16(y[4+quant.QK_K+2*j:], uint16(s))
		}
		binary.LittleEndian.PutUint32(y, math.Float32bits(1/iscale))
	}
}

// QuantizeQ8_0 writes x into Q8_0 blocks as ggml's quantize_row_q8_0_ref
// does: d = amax/127 stored as f16, quants round(x/d) half away from zero
// using the unrounded float32 d.
func QuantizeQ8_0(dst []byte, x []float32) {
	for b := range len(x) / 32 {
		xb := x[b*32 : (b+1)*32]
		y := dst[b*34 : b*34+34]
		var amax float32
		for _, v := range xb {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(y, quant.Float32ToFP16(d))
		for j, v := range xb {
			y[2+j] = byte(int8(math.Round(float64(v * id))))
		}
	}
}

// QuantizeF16 converts x to half precision, rounding to nearest even.
func QuantizeF16(dst []byte, x []float32) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(dst[2*i:], quant.Float32ToFP16(v))
	}
}

// QuantizeBF16 converts x to bfloat16, rounding to nearest even.
func QuantizeBF16(dst []byte, x []float32) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(dst[2*i:], quant.Float32ToBF16(v))
	}
}
