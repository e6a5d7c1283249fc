package ledgertest

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/damascus-llm/damascus/quant"
)

func half(b []byte) float64 {
	return float64(quant.FP16ToFloat32(binary.LittleEndian.Uint16(b)))
}

// Dequantize expands one row of k values of type t into float64, straight
// from ggml's dequantize_row_* formulas.
func Dequantize(t quant.Type, row []byte, k int) []float64 {
	y := make([]float64, k)
	switch t {
	case quant.Q4_K:
		for b := 0; b < k/QK; b++ {
			blk := row[b*Q4KBytes:]
			d, dmin := half(blk[0:]), half(blk[2:])
			sc, m := q4kScales(blk[4:16])
			for c := 0; c < 4; c++ {
				q := blk[16+32*c:]
				for l := 0; l < 32; l++ {
					y[b*QK+64*c+l] = d*float64(sc[2*c])*float64(q[l]&15) - dmin*float64(m[2*c])
					y[b*QK+64*c+32+l] = d*float64(sc[2*c+1])*float64(q[l]>>4) - dmin*float64(m[2*c+1])
				}
			}
		}
	case quant.Q6_K:
		for b := 0; b < k/QK; b++ {
			blk := row[b*Q6KBytes:]
			d := half(blk[208:])
			for h := 0; h < 2; h++ {
				ql, qh, sc := blk[64*h:], blk[128+32*h:], blk[192+8*h:]
				out := y[b*QK+128*h:]
				for l := 0; l < 32; l++ {
					is := l / 16
					q1 := int(ql[l]&15|(qh[l]&3)<<4) - 32
					q2 := int(ql[l+32]&15|(qh[l]>>2&3)<<4) - 32
					q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
					q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
					out[l] = d * float64(int8(sc[is])) * float64(q1)
					out[l+32] = d * float64(int8(sc[is+2])) * float64(q2)
					out[l+64] = d * float64(int8(sc[is+4])) * float64(q3)
					out[l+96] = d * float64(int8(sc[is+6])) * float64(q4)
				}
			}
		}
	case quant.Q8_K:
		for b := 0; b < k/QK; b++ {
			blk := row[b*Q8KBytes:]
			d := float64(math.Float32frombits(binary.LittleEndian.Uint32(blk)))
			for j := 0; j < QK; j++ {
				y[b*QK+j] = d * float64(int8(blk[4+j]))
			}
		}
	case quant.Q8_0:
		for b := 0; b < k/32; b++ {
			blk := row[b*Q80Bytes:]
			d := half(blk)
			for j := 0; j < 32; j++ {
				y[b*32+j] = d * float64(int8(blk[2+j]))
			}
		}
	case quant.F32:
		for i := range y {
			y[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])))
		}
	case quant.F16:
		for i := range y {
			y[i] = half(row[2*i:])
		}
	case quant.BF16:
		for i := range y {
			y[i] = float64(quant.BF16ToFloat32(binary.LittleEndian.Uint16(row[2*i:])))
		}
	default:
		panic(fmt.Sprintf("ledgertest: no reference dequantizer for %s", t))
	}
	return y
}

// Dot returns the float64 dot product of a weight row and an activation row
// (already in the activation type) and the sum of its terms' magnitudes,
// the scale a tolerance is measured against.
func Dot(wt, xt quant.Type, wrow, xrow []byte, k int) (dot, scale float64) {
	w, x := Dequantize(wt, wrow, k), Dequantize(xt, xrow, k)
	for i := range w {
		dot += w[i] * x[i]
		scale += math.Abs(w[i] * x[i])
	}
	return dot, scale
}

// Q4KMinMagnitude returns |dmin·m| for value i of a row of Q4_K blocks: the
// size of the term a float32 dequantizer subtracts, which bounds its
// cancellation error.
func Q4KMinMagnitude(row []byte, i int) float64 {
	blk := row[i/QK*Q4KBytes:]
	_, m := q4kScales(blk[4:16])
	return math.Abs(half(blk[2:]) * float64(m[i%QK/32]))
}

// q4kScales unpacks a Q4_K block's eight 6-bit scales and mins.
func q4kScales(s []byte) (sc, m [8]uint8) {
	for j := range 8 {
		sc[j], m[j] = quant.ScaleMinK4(j, s)
	}
	return sc, m
}
