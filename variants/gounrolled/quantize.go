package gounrolled

import (
	"encoding/binary"
	"math"
)

// QuantizeQ8K writes x as Q8_K blocks, byte for byte as ggml's
// quantize_row_q8_K_ref: scale -127/max of the value with the largest
// magnitude (first one on ties), round half to even (ggml's nearest_int),
// clamp at 127, bsums over 16 values. An all-zero block gets d = 0 and zero
// quants and sums (ggml leaves its bsums unwritten).
func QuantizeQ8K(dst []byte, x []float32) {
	for b := 0; b < len(x)/qk; b++ {
		xb := x[b*qk : (b+1)*qk : (b+1)*qk]
		yb := dst[b*q8KBytes : (b+1)*q8KBytes : (b+1)*q8KBytes]
		var max, amax float32
		for _, v := range xb {
			if a := abs32(v); a > amax {
				amax, max = a, v
			}
		}
		if amax == 0 {
			clear(yb)
			continue
		}
		iscale := -127 / max
		qs := yb[q8KQsOff : q8KQsOff+qk : q8KQsOff+qk]
		for j, v := range xb {
			q := nearestInt(iscale * v)
			if q > 127 {
				q = 127
			}
			qs[j] = byte(int8(q))
		}
		for g := 0; g < qk/16; g++ {
			var s int32
			for _, q := range qs[16*g : 16*g+16] {
				s += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(yb[q8KSumsOff+2*g:], uint16(int16(s)))
		}
		binary.LittleEndian.PutUint32(yb, math.Float32bits(1/iscale))
	}
}

// nearestInt is ggml's nearest_int: adding 1.5·2²³ rounds to an integer
// (half to even) in the low mantissa bits. The float32 conversion keeps the
// product from being fused into the addition.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

// QuantizeQ8_0 writes x as Q8_0 blocks, byte for byte as ggml's
// quantize_row_q8_0_ref: d = amax/127 stored as fp16, quants roundf(x/d)
// (half away from zero).
func QuantizeQ8_0(dst []byte, x []float32) {
	for b := 0; b < len(x)/q80Values; b++ {
		xb := x[b*q80Values : (b+1)*q80Values : (b+1)*q80Values]
		yb := dst[b*q80Bytes : (b+1)*q80Bytes : (b+1)*q80Bytes]
		var amax float32
		for _, v := range xb {
			if a := abs32(v); !(amax > a) { // ggml's MAX(amax, a), NaN included
				amax = a
			}
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(yb, Float32ToFP16(d))
		for j, v := range xb {
			yb[2+j] = byte(int8(int32(math.Round(float64(float32(v * id))))))
		}
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
