package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The quantizers below follow ggml's quantize_row_*_ref (ggml-quants.c), the
// functions ggml_quantize_chunk uses when no importance matrix is given, with
// the same float32 operations in the same order, so that the bytes match
// ggml's. As in dequantize.go, products that feed an addition are wrapped in
// float32(...) so Go cannot fuse them into an FMA.

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it is treated as all zeros.
const groupMaxEps = 1e-15

var quantizers = map[Type]func(dst []byte, src []float32){
	F32:  QuantizeF32,
	F16:  QuantizeF16,
	BF16: QuantizeBF16,
	Q4_0: QuantizeQ4_0,
	Q4_1: QuantizeQ4_1,
	Q5_0: QuantizeQ5_0,
	Q5_1: QuantizeQ5_1,
	Q8_0: QuantizeQ8_0,
	Q8_1: QuantizeQ8_1,
	Q2_K: QuantizeQ2K,
	Q3_K: QuantizeQ3K,
	Q4_K: QuantizeQ4K,
	Q5_K: QuantizeQ5K,
	Q6_K: QuantizeQ6K,
	Q8_K: QuantizeQ8K,
}

// CanQuantize reports whether Quantize supports t.
func CanQuantize(t Type) bool { _, ok := quantizers[t]; return ok }

// Quantize encodes the row src as type t into dst. len(src) must be a whole
// number of blocks and dst exactly RowSize(t, len(src)) bytes. A NaN or
// infinite input is an error naming its index: ggml would encode garbage.
func Quantize(t Type, src []float32, dst []byte) error {
	fn, err := rowFunc("quantize", "no reference quantizer", quantizers, t, len(src), len(dst))
	if err != nil {
		return err
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quantize %s: value %d is %v", t, i, v)
		}
	}
	fn(dst, src)
	return nil
}

// nearestInt rounds f to the nearest integer, ties to even, with ggml's
// trick of adding 1.5·2²³ and reading the mantissa. Valid for |f| ≤ 4194303;
// outside that it returns what ggml's returns, which keeps degenerate inputs
// bit-identical too.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912 // float32(f) keeps a product argument from fusing
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

func clamp(v, lo, hi int32) int32 { return max(lo, min(hi, v)) }

func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, Float32ToFP16(f)) }

// QuantizeF32 stores float32 values little-endian.
func QuantizeF32(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

// QuantizeF16 stores half values, rounded to nearest even.
func QuantizeF16(dst []byte, src []float32) {
	for i, v := range src {
		putHalf(dst[2*i:], v)
	}
}

// QuantizeBF16 stores bfloat16 values, rounded to nearest even.
func QuantizeBF16(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], Float32ToBF16(v))
	}
}

// absMax returns the value of largest magnitude in x (the first one on ties) and that magnitude.
func absMax(x []float32) (maxv, amax float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	return maxv, amax
}

// packNibbles stores the 32 values of x as the 4-bit quants quant(v), two a
// byte: value j in the low nibble of qs[j], value j+16 in its high nibble
// (the layout of ggml's Q4_0 and Q4_1, which differ only in quant).
func packNibbles(qs []byte, x []float32, quant func(float32) uint8) {
	for j := 0; j < 16; j++ {
		qs[j] = quant(x[j]) | quant(x[j+16])<<4
	}
}

// packQ5 stores the 32 values of x as the 5-bit quants quant(v): their low
// four bits as packNibbles does, their fifth bits in the returned qh (bit j
// for value j), the layout of ggml's Q5_0 and Q5_1.
func packQ5(qs []byte, x []float32, quant func(float32) uint8) (qh uint32) {
	for j := 0; j < 16; j++ {
		q0, q1 := quant(x[j]), quant(x[j+16])
		qs[j] = q0&0x0f | (q1&0x0f)<<4
		qh |= uint32(q0&0x10) >> 4 << j
		qh |= uint32(q1&0x10) >> 4 << (j + 16)
	}
	return qh
}

// eachBlock calls quantize with each block of src (values long) and the
// size bytes of dst it becomes: the loop over blocks every quantizer shares.
func eachBlock(dst []byte, src []float32, values, size int, quantize func(y []byte, x []float32)) {
	for b := 0; b < len(src)/values; b++ {
		quantize(dst[b*size:b*size+size], src[b*values:b*values+values])
	}
}

// quantizeAbsMax is the frame of quantize_row_q4_0_ref and _q5_0_ref: each
// 32-value block of src becomes size bytes of dst, d = max/div (max the
// value of largest magnitude) first as a half, then what pack writes of the
// block with id = 1/d.
func quantizeAbsMax(dst []byte, src []float32, size int, div float32, pack func(y []byte, x []float32, id float32)) {
	eachBlock(dst, src, 32, size, func(y []byte, x []float32) {
		maxv, _ := absMax(x)
		d := maxv / div
		putHalf(y, d)
		pack(y, x, inverse(d))
	})
}

// quantizeMinMax is the frame of quantize_row_q4_1_ref and _q5_1_ref: each
// 32-value block of src becomes size bytes of dst, d = (max−min)/levels and
// m = min first as halves, then what pack writes of the block with id = 1/d.
func quantizeMinMax(dst []byte, src []float32, size int, levels float32, pack func(y []byte, x []float32, lo, id float32)) {
	eachBlock(dst, src, 32, size, func(y []byte, x []float32) {
		lo, hi := minMax(x)
		d := (hi - lo) / levels
		putHalf(y, d)
		putHalf(y[2:], lo)
		pack(y, x, lo, inverse(d))
	})
}

// QuantizeQ4_0 follows quantize_row_q4_0_ref: d = max/−8 where max is the
// value of largest magnitude, q = min(15, trunc(x/d + 8.5)).
func QuantizeQ4_0(dst []byte, src []float32) {
	quantizeAbsMax(dst, src, 18, -8, func(y []byte, x []float32, id float32) {
		packNibbles(y[2:], x, func(v float32) uint8 { return uint8(min(15, int8(int32(float32(v*id)+8.5)))) })
	})
}

// minMax returns the smallest and largest value of x.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// QuantizeQ4_1 follows quantize_row_q4_1_ref: d = (max−min)/15, m = min,
// q = min(15, trunc((x−min)/d + 0.5)).
func QuantizeQ4_1(dst []byte, src []float32) {
	quantizeMinMax(dst, src, 20, 15, func(y []byte, x []float32, lo, id float32) {
		packNibbles(y[4:], x, func(v float32) uint8 { return uint8(min(15, int8(int32(float32((v-lo)*id)+0.5)))) })
	})
}

// QuantizeQ5_0 follows quantize_row_q5_0_ref: d = max/−16,
// q = min(31, trunc(x/d + 16.5)), fifth bits gathered in qh.
func QuantizeQ5_0(dst []byte, src []float32) {
	quantizeAbsMax(dst, src, 22, -16, func(y []byte, x []float32, id float32) {
		qh := packQ5(y[6:], x, func(v float32) uint8 { return uint8(min(31, int8(int32(float32(v*id)+16.5)))) })
		binary.LittleEndian.PutUint32(y[2:], qh)
	})
}

// QuantizeQ5_1 follows quantize_row_q5_1_ref: d = (max−min)/31, m = min,
// q = trunc((x−min)/d + 0.5).
func QuantizeQ5_1(dst []byte, src []float32) {
	quantizeMinMax(dst, src, 24, 31, func(y []byte, x []float32, lo, id float32) {
		qh := packQ5(y[8:], x, func(v float32) uint8 { return uint8(int32(float32((v-lo)*id) + 0.5)) })
		binary.LittleEndian.PutUint32(y[4:], qh)
	})
}

// roundAway rounds half away from zero, as C's roundf.
func roundAway(f float32) int32 { return int32(math.Round(float64(f))) }

// q8Block writes the quants round(x/d) of a 32-value block x, d = amax/127,
// into qs and returns d and the quants' sum: quantize_row_q8_0_ref's and
// _q8_1_ref's blocks, which differ only in where d (and the sum) go.
func q8Block(qs []byte, x []float32) (d float32, sum int32) {
	_, amax := absMax(x)
	d = amax / 127
	id := inverse(d)
	for j, v := range x {
		q := int8(roundAway(v * id))
		qs[j] = uint8(q)
		sum += int32(q)
	}
	return d, sum
}

// QuantizeQ8_0 follows quantize_row_q8_0_ref: d = amax/127, q = round(x/d).
func QuantizeQ8_0(dst []byte, src []float32) {
	eachBlock(dst, src, 32, 34, func(y []byte, x []float32) {
		d, _ := q8Block(y[2:], x)
		putHalf(y, d)
	})
}

// QuantizeQ8_1 follows quantize_row_q8_1_ref: as Q8_0, plus s = d·Σq.
func QuantizeQ8_1(dst []byte, src []float32) {
	eachBlock(dst, src, 32, 36, func(y []byte, x []float32) {
		d, sum := q8Block(y[4:], x)
		putHalf(y, d)
		putHalf(y[2:], float32(sum)*d)
	})
}

// QuantizeQ8K follows quantize_row_q8_K_ref: d = max/−127·(−1) as a float32,
// q = min(127, nearest(x·(−127/max))), bsums = sums of 16 q. An all-zero
// block gets d = 0 and zero quants; ggml leaves its bsums unwritten, here
// they are zero.
func QuantizeQ8K(dst []byte, src []float32) {
	eachBlock(dst, src, QK_K, 292, func(y []byte, x []float32) {
		clear(y)
		maxv, amax := absMax(x)
		if amax == 0 {
			return
		}
		iscale := -127 / maxv
		qs := y[4 : 4+QK_K]
		for j, v := range x {
			qs[j] = uint8(int8(min(127, nearestInt(iscale*v))))
		}
		for j := 0; j < QK_K/16; j++ {
			var sum int32
			for _, q := range qs[16*j : 16*j+16] {
				sum += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(y[260+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(y, math.Float32bits(1/iscale))
	})
}

// makeQXQuants is ggml's make_qx_quants for rmse_type 1 without importance
// weights (weights x²): symmetric quants in [−nmax, nmax−1] stored offset by
// nmax, with the scale refined over 18 trial inverse scales.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	maxv, amax := absMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fn := float32(nmax)
	iscale := -fn / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := clamp(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w := v * v
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fn + float32(0.1*float32(is))) / maxv
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := clamp(nearestInt(iscale*v), -nmax, nmax-1)
			w := v * v
			fl := float32(l)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && sumlx*sumlx > best*suml2 {
			for i, v := range x {
				L[i] = int8(nmax + clamp(nearestInt(iscale*v), -nmax, nmax-1))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse: symmetric quants in
// [−nmax, nmax−1] improved one value at a time, stored offset by nmax.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	maxv, amax := absMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	iscale := -float32(nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := clamp(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l)
		w := v * v
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for itry := 0; itry < 5; itry++ {
		changed := 0
		for i, v := range x {
			w := v * v
			fl := float32(L[i])
			slx := sumlx - float32(float32(w*v)*fl)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*fl)*fl)
				newL := clamp(nearestInt(v*sl2/slx), -nmax, nmax-1)
				if newL != int32(L[i]) {
					fnl := float32(newL)
					slx += float32(float32(w*v) * fnl)
					sl2 += float32(float32(w*fnl) * fnl)
					if sl2 > 0 && slx*slx*suml2 > sumlx*sumlx*sl2 {
						L[i] = int8(newL)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// makeQKX2Quants is ggml's make_qkx2_quants: asymmetric quants in [0, nmax]
// with scale and min fitted by weighted least squares over nstep+1 trial
// inverse scales. It returns the scale and the (non-negative) min to subtract.
func makeQKX2Quants(nmax int32, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L[:n])
		return 0, -lo
	}
	fn := float32(nmax)
	iscale := fn / (hi - lo)
	scale = 1 / iscale
	errorOf := func(diff float32) float32 {
		if useMad {
			return abs32(diff)
		}
		return diff * diff
	}
	var bestError float32
	for i, v := range x {
		l := clamp(nearestInt(iscale*(v-lo)), 0, nmax)
		L[i] = uint8(l)
		diff := float32(scale*float32(l)) + lo - v
		bestError += float32(weights[i] * errorOf(diff))
	}
	if nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + fn) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clamp(nearestInt(iscale*(v-lo)), 0, nmax)
			Laux[i] = uint8(l)
			w, fl := weights[i], float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i, v := range x {
				diff := float32(thisScale*float32(Laux[i])) + thisMin - v
				curError += float32(weights[i] * errorOf(diff))
			}
			if curError < bestError {
				copy(L[:n], Laux[:n])
				bestError = curError
				scale = thisScale
				lo = thisMin
			}
		}
	}
	return scale, -lo
}

// QuantizeQ2K follows quantize_row_q2_K_ref: 16 sub-blocks of 16 values,
// each fitted by makeQKX2Quants (nmax 3, |x| weights, mean absolute error),
// 4-bit scales and mins relative to the largest, then quants recomputed from
// the stored scales.
func QuantizeQ2K(dst []byte, src []float32) {
	var L [QK_K]uint8
	var laux [16]uint8
	var weights, mins, scales [16]float32
	eachBlock(dst, src, QK_K, 84, func(y []byte, x []float32) {
		ysc, qs := y[0:16], y[16:80]
		var maxScale, maxMin float32
		for j := 0; j < 16; j++ {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2Quants(3, xs, weights[:], L[16*j:16*j+16], laux[:], -0.5, 0.1, 15, true)
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		if maxScale > 0 {
			iscale := 15 / maxScale
			for j := range ysc {
				ysc[j] = uint8(nearestInt(iscale * scales[j]))
			}
			putHalf(y[80:], maxScale/15)
		} else {
			clear(ysc)
			putHalf(y[80:], 0)
		}
		if maxMin > 0 {
			iscale := 15 / maxMin
			for j := range ysc {
				ysc[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
			}
			putHalf(y[82:], maxMin/15)
		} else {
			putHalf(y[82:], 0)
		}
		dAll, mAll := half(y[80:]), half(y[82:])
		for j := 0; j < 16; j++ {
			d := dAll * float32(ysc[j]&0x0f)
			if d == 0 {
				continue
			}
			dm := mAll * float32(ysc[j]>>4)
			for ii := 0; ii < 16; ii++ {
				L[16*j+ii] = uint8(clamp(nearestInt((x[16*j+ii]+dm)/d), 0, 3))
			}
		}
		for j := 0; j < QK_K; j += 128 {
			for l := 0; l < 32; l++ {
				qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
			}
		}
	})
}

// QuantizeQ3K follows quantize_row_q3_K_ref: 16 sub-blocks of 16 values
// fitted by makeQ3Quants, 6-bit signed scales relative to the largest, then
// quants in [−4, 3] recomputed from the stored scales; the third bit goes
// to hmask.
func QuantizeQ3K(dst []byte, src []float32) {
	var L [QK_K]int8
	var scales [16]float32
	eachBlock(dst, src, QK_K, 110, func(y []byte, x []float32) {
		hmask, qs, ysc := y[0:32], y[32:96], y[96:108]
		var maxScale, amax float32
		for j := 0; j < 16; j++ {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
			if s := abs32(scales[j]); s > amax {
				amax, maxScale = s, scales[j]
			}
		}
		clear(ysc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := 0; j < 16; j++ {
				l := int8(nearestInt(iscale * scales[j]))
				l = max(-32, min(31, l)) + 32
				if j < 8 {
					ysc[j] = uint8(l) & 0x0f
				} else {
					ysc[j-8] |= (uint8(l) & 0x0f) << 4
				}
				l >>= 4
				ysc[j%4+8] |= uint8(l) << (2 * (j / 4))
			}
			putHalf(y[108:], 1/iscale)
		} else {
			putHalf(y[108:], 0)
		}
		dAll := half(y[108:])
		for j := 0; j < 16; j++ {
			var sc int8
			if j < 8 {
				sc = int8(ysc[j] & 0x0f)
			} else {
				sc = int8(ysc[j-8] >> 4)
			}
			sc = (sc | int8((ysc[8+j%4]>>(2*(j/4)))&3)<<4) - 32
			d := dAll * float32(sc)
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				L[16*j+ii] = int8(clamp(nearestInt(x[16*j+ii]/d), -4, 3) + 4)
			}
		}
		clear(hmask)
		m, hm := 0, uint8(1)
		for j := 0; j < QK_K; j++ {
			if L[j] > 3 {
				hmask[m] |= hm
				L[j] -= 4
			}
			if m++; m == QK_K/8 {
				m, hm = 0, hm<<1
			}
		}
		for j := 0; j < QK_K; j += 128 {
			for l := 0; l < 32; l++ {
				qs[j/4+l] = uint8(L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6)
			}
		}
	})
}

// PutScaleMinK4 stores eight 6-bit scales and mins in the twelve bytes of
// a Q4_K/Q5_K super-block (the inverse of ScaleMinK4). dst must be zero.
func PutScaleMinK4(dst []byte, ls, lm *[8]uint8) {
	for j := 0; j < 8; j++ {
		if j < 4 {
			dst[j] = ls[j]
			dst[j+4] = lm[j]
		} else {
			dst[j+4] = ls[j]&0x0f | (lm[j]&0x0f)<<4
			dst[j-4] |= (ls[j] >> 4) << 6
			dst[j] |= (lm[j] >> 4) << 6
		}
	}
}

// kQuantScaleMins fits the eight 32-value sub-blocks of a Q4_K/Q5_K super-block
// (makeQKX2Quants, weights av|x|+|x|), packs 6-bit scales and mins into
// dst[4:16] with d and dmin in dst[0:4], and recomputes the quants L in
// [0, nmax] from the stored values, as quantize_row_q4_K_ref and
// quantize_row_q5_K_ref both do.
func kQuantScaleMins(dst []byte, x []float32, L *[QK_K]uint8, nmax int32, rmin, rdelta float32, nstep int) {
	var laux [32]uint8
	var weights [32]float32
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:32*j+32], laux[:], rmin, rdelta, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := 0; j < 8; j++ {
		ls[j] = min(63, uint8(nearestInt(invScale*scales[j])))
		lm[j] = min(63, uint8(nearestInt(invMin*mins[j])))
	}
	clear(dst[4:16])
	PutScaleMinK4(dst[4:16], &ls, &lm)
	putHalf(dst, maxScale/63)
	putHalf(dst[2:], maxMin/63)
	dAll, mAll := half(dst), half(dst[2:])
	for j := 0; j < 8; j++ {
		sc, m := ScaleMinK4(j, dst[4:16])
		d := dAll * float32(sc)
		if d == 0 {
			continue
		}
		dm := mAll * float32(m)
		for ii := 0; ii < 32; ii++ {
			L[32*j+ii] = uint8(clamp(nearestInt((x[32*j+ii]+dm)/d), 0, nmax))
		}
	}
}

// QuantizeQ4K follows quantize_row_q4_K_ref (nmax 15, 21 trial scales from
// −1 in steps of 0.1).
func QuantizeQ4K(dst []byte, src []float32) {
	var L [QK_K]uint8
	eachBlock(dst, src, QK_K, 144, func(y []byte, x []float32) {
		kQuantScaleMins(y, x, &L, 15, -1, 0.1, 20)
		q := y[16:144]
		for j := 0; j < QK_K; j += 64 {
			for l := 0; l < 32; l++ {
				q[l] = L[j+l] | L[j+l+32]<<4
			}
			q = q[32:]
		}
	})
}

// QuantizeQ5K follows quantize_row_q5_K_ref (nmax 31, 16 trial scales from
// −0.5 in steps of 0.1); the fifth bits go to qh.
func QuantizeQ5K(dst []byte, src []float32) {
	var L [QK_K]uint8
	eachBlock(dst, src, QK_K, 176, func(y []byte, x []float32) {
		kQuantScaleMins(y, x, &L, 31, -0.5, 0.1, 15)
		qh, ql := y[16:48], y[48:176]
		clear(qh)
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < QK_K; n += 64 {
			for j := 0; j < 32; j++ {
				l1, l2 := L[n+j], L[n+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
			ql = ql[32:]
		}
	})
}

// QuantizeQ6K follows quantize_row_q6_K_ref: 16 sub-blocks of 16 values
// fitted by makeQXQuants (nmax 32), int8 scales relative to the largest
// (−128/max), quants in [−32, 31] recomputed from the stored scales.
func QuantizeQ6K(dst []byte, src []float32) {
	var L [QK_K]int8
	var scales [16]float32
	eachBlock(dst, src, QK_K, 210, func(y []byte, x []float32) {
		var maxScale, maxAbsScale float32
		for ib := 0; ib < 16; ib++ {
			scales[ib] = makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			if a := abs32(scales[ib]); a > maxAbsScale {
				maxAbsScale, maxScale = a, scales[ib]
			}
		}
		if maxAbsScale < groupMaxEps {
			clear(y)
			return
		}
		iscale := -128 / maxScale
		putHalf(y[208:], 1/iscale)
		ysc := y[192:208]
		for ib := range ysc {
			ysc[ib] = uint8(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		dAll := half(y[208:])
		for j := 0; j < 16; j++ {
			d := dAll * float32(int8(ysc[j]))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				L[16*j+ii] = int8(clamp(nearestInt(x[16*j+ii]/d), -32, 31) + 32)
			}
		}
		ql, qh := y[0:128], y[128:192]
		for j := 0; j < QK_K; j += 128 {
			for l := 0; l < 32; l++ {
				q1 := uint8(L[j+l]) & 0x0f
				q2 := uint8(L[j+l+32]) & 0x0f
				q3 := uint8(L[j+l+64]) & 0x0f
				q4 := uint8(L[j+l+96]) & 0x0f
				ql[l] = q1 | q3<<4
				ql[l+32] = q2 | q4<<4
				qh[l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
			}
			ql, qh = ql[64:], qh[32:]
		}
	})
}

// inverse is 1/d, or 0 for a zero scale (an all-zero block), as ggml's
// reference quantizers compute id.
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}
