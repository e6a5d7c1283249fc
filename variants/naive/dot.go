package naive

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/damascus-llm/damascus/quant"
)

// A rowDot is the dot product of one weight row of k values with one
// activation row, both in their block formats.
type rowDot func(w, x []byte, k int) float32

var rowDots = map[quant.Type]rowDot{
	quant.F32:  dotF32,
	quant.F16:  dotF16,
	quant.BF16: dotBF16,
	quant.Q8_0: dotQ8_0,
	quant.Q4_0: dotQ4_0,
	quant.Q4_K: dotQ4K,
	quant.Q5_K: dotQ5K,
	quant.Q6_K: dotQ6K,
}

func half(b []byte) float32 { return quant.FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

func f32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// floats views little-endian float32 bytes as []float32 (amd64 and arm64 are
// little-endian; the slice header's length is in elements).
func floats(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func dotF32(w, x []byte, k int) float32 {
	wf, xf := floats(w[:4*k]), floats(x[:4*k])
	var sum float32
	for i := range k {
		sum += wf[i] * xf[i]
	}
	return sum
}

func dotF16(w, x []byte, k int) float32 {
	var sum float32
	for i := range k {
		sum += half(w[2*i:]) * half(x[2*i:])
	}
	return sum
}

func dotBF16(w, x []byte, k int) float32 {
	var sum float32
	for i := range k {
		a := quant.BF16ToFloat32(binary.LittleEndian.Uint16(w[2*i:]))
		b := quant.BF16ToFloat32(binary.LittleEndian.Uint16(x[2*i:]))
		sum += a * b
	}
	return sum
}

// dotQ8_0 pairs Q8_0 weights with Q8_0 activations: per 32-value block,
// d_w·d_x·Σ q_w·q_x in integers.
func dotQ8_0(w, x []byte, k int) float32 {
	return dotBlocks32(w, x, k, 34, func(wq, xq []byte) (s int32) {
		for j := range 32 {
			s += int32(int8(wq[j])) * int32(int8(xq[j]))
		}
		return s
	})
}

// dotQ4_0 pairs Q4_0 weights (d, 16 bytes of nibbles: low nibbles are values
// 0..15, high nibbles 16..31, each minus 8) with Q8_0 activations.
func dotQ4_0(w, x []byte, k int) float32 {
	return dotBlocks32(w, x, k, 18, func(wq, xq []byte) (s int32) {
		for j := range 16 {
			lo := int32(wq[j]&0x0f) - 8
			hi := int32(wq[j]>>4) - 8
			s += lo*int32(int8(xq[j])) + hi*int32(int8(xq[16+j]))
		}
		return s
	})
}

// dotBlocks32 is the frame of the products of 32-value weight blocks (size
// bytes: an fp16 d, then the quants) with Q8_0 activations: per block
// d_w·d_x·isum, isum the integer dot of the two blocks' quants.
func dotBlocks32(w, x []byte, k, size int, isum func(wq, xq []byte) int32) float32 {
	var sum float32
	for b := range k / 32 {
		wb, xb := w[b*size:b*size+size], x[b*34:b*34+34]
		sum += half(wb) * half(xb) * float32(isum(wb[2:], xb[2:]))
	}
	return sum
}

// scaleMinK4 unpacks 6-bit scale and min j of a Q4_K block's twelve packed
// bytes (ggml's get_scale_min_k4).
func scaleMinK4(j int, q []byte) (sc, m int32) {
	if j < 4 {
		return int32(q[j] & 63), int32(q[j+4] & 63)
	}
	return int32(q[j+4]&0x0f | (q[j-4]>>6)<<4), int32(q[j+4]>>4 | (q[j]>>6)<<4)
}

// dotQ4K pairs Q4_K weights with Q8_K activations. Sub-block j (32 values)
// is d·sc_j·q − dmin·m_j, so its dot with x is d·sc_j·Σq·q8 − dmin·m_j·Σq8;
// Σq8 comes from the activation's bsums, as in ggml.
func dotQ4K(w, x []byte, k int) float32 { return dotK4(w, x, k, 144, 16, -1) }

// dotQ5K pairs Q5_K weights (Q4_K's d, dmin and scales, qh[32] fifth
// bits, qs[128] nibbles) with Q8_K activations: Q4_K's sums with bit j of
// qh[l] as the fifth bit of value l of sub-block j, as ggml's
// vec_dot_q5_K_q8_K.
func dotQ5K(w, x []byte, k int) float32 { return dotK4(w, x, k, 176, 48, 16) }

// dotK4 is the dot of Q4_K-style blocks (bytes each: d, dmin, 12 scale
// bytes, the nibbles at qs) with Q8_K activations; qh >= 0 is the offset
// of Q5_K's fifth bits.
func dotK4(w, x []byte, k, bytes, qs, qh int) float32 {
	var sum float32
	for b := range k / quant.QK_K {
		wb, xb := w[b*bytes:(b+1)*bytes], x[b*292:b*292+292]
		scales := wb[4:16]
		q8 := xb[4 : 4+quant.QK_K]
		var sumi, summ int32
		for j := range 8 {
			sc, m := scaleMinK4(j, scales)
			nib := wb[qs+(j/2)*32 : qs+(j/2)*32+32]
			shift := uint(4 * (j % 2))
			var s int32
			for l := range 32 {
				q := int32(nib[l] >> shift & 0x0f)
				if qh >= 0 {
					q |= int32(wb[qh+l]>>uint(j)&1) << 4
				}
				s += q * int32(int8(q8[j*32+l]))
			}
			sumi += sc * s
			summ += m * (bsum(xb, 2*j) + bsum(xb, 2*j+1))
		}
		xd := f32(xb)
		sum += half(wb)*xd*float32(sumi) - half(wb[2:])*xd*float32(summ)
	}
	return sum
}

// bsum is the i-th stored sum of 16 quants of a Q8_K block.
func bsum(xb []byte, i int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(xb[4+quant.QK_K+2*i:])))
}

// dotQ6K pairs Q6_K weights (ql[128] low nibbles, qh[64] high 2 bits,
// scales[16] int8, d f16) with Q8_K activations: d·Σ_j sc_j·Σ(q−32)·q8 over
// sixteen sub-blocks of 16.
func dotQ6K(w, x []byte, k int) float32 {
	var sum float32
	var q [quant.QK_K]int32
	for b := range k / quant.QK_K {
		wb, xb := w[b*210:b*210+210], x[b*292:b*292+292]
		for n := 0; n < 2; n++ {
			ql, qh := wb[64*n:64*n+64], wb[128+32*n:128+32*n+32]
			for l := range 32 {
				q[128*n+l] = int32(ql[l]&0x0f|(qh[l]>>0&3)<<4) - 32
				q[128*n+l+32] = int32(ql[l+32]&0x0f|(qh[l]>>2&3)<<4) - 32
				q[128*n+l+64] = int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q[128*n+l+96] = int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			}
		}
		q8 := xb[4 : 4+quant.QK_K]
		var sumi int32
		for j := range 16 {
			var s int32
			for l := j * 16; l < j*16+16; l++ {
				s += q[l] * int32(int8(q8[l]))
			}
			sumi += int32(int8(wb[192+j])) * s
		}
		sum += half(wb[208:]) * f32(xb) * float32(sumi)
	}
	return sum
}
