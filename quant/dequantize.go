package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The dequantizers below follow ggml's dequantize_row_* (ggml-quants.c)
// operation for operation, so their results are bit-identical to ggml's
// to_float. Every product that feeds an addition is wrapped in an explicit
// float32 conversion: Go may otherwise fuse it into an FMA (arm64, GOAMD64=v3),
// which rounds once where ggml rounds twice.

// Dequantize expands the row src of type t into dst. len(dst) is the number of
// values and must be a whole number of blocks; src must hold exactly
// RowSize(t, len(dst)) bytes.
func Dequantize(t Type, src []byte, dst []float32) error {
	fn, err := rowFunc("dequantize", "not supported", dequantizers, t, len(dst), len(src))
	if err != nil {
		return err
	}
	fn(dst, src)
	return nil
}

// CanDequantize reports whether Dequantize supports t.
func CanDequantize(t Type) bool { _, ok := dequantizers[t]; return ok }

var dequantizers = map[Type]func(dst []float32, src []byte){
	F32:  DequantizeF32,
	F16:  DequantizeF16,
	BF16: DequantizeBF16,
	Q4_0: DequantizeQ4_0,
	Q4_1: DequantizeQ4_1,
	Q5_0: DequantizeQ5_0,
	Q5_1: DequantizeQ5_1,
	Q8_0: DequantizeQ8_0,
	Q8_1: DequantizeQ8_1,
	Q2_K: DequantizeQ2K,
	Q3_K: DequantizeQ3K,
	Q4_K: DequantizeQ4K,
	Q5_K: DequantizeQ5K,
	Q6_K: DequantizeQ6K,
	Q8_K: DequantizeQ8K,
}

// rowFunc is op's function for type t from fns, once a row of n values of t
// is checked to take exactly size bytes; missing says why t has none.
func rowFunc[F any](op, missing string, fns map[Type]F, t Type, n, size int) (F, error) {
	fn, ok := fns[t]
	if !ok {
		return fn, fmt.Errorf("%s %s: %s", op, t, missing)
	}
	want, err := RowSize(t, int64(n))
	if err == nil && int64(size) != want {
		err = fmt.Errorf("%s: row of %d values takes %d bytes, got %d", t, n, want, size)
	}
	if err != nil {
		return fn, fmt.Errorf("%s: %w", op, err)
	}
	return fn, nil
}

func half(b []byte) float32 { return FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

// DequantizeF32 copies little-endian float32 values. len(src) = 4·len(dst).
func DequantizeF32(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// DequantizeF16 converts little-endian half values. len(src) = 2·len(dst).
func DequantizeF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = half(src[2*i:])
	}
}

// DequantizeBF16 converts little-endian bfloat16 values. len(src) = 2·len(dst).
func DequantizeBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// DequantizeQ4_0 expands Q4_0 blocks: d (f16), 16 bytes of nibbles; value
// j is (low nibble − 8)·d, value j+16 is (high nibble − 8)·d.
func DequantizeQ4_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		x := src[b*18 : b*18+18]
		y := dst[b*32 : b*32+32]
		d := half(x)
		qs := x[2:18]
		for j := 0; j < 16; j++ {
			y[j] = float32(int(qs[j]&0x0f)-8) * d
			y[j+16] = float32(int(qs[j]>>4)-8) * d
		}
	}
}

// DequantizeQ4_1 expands Q4_1 blocks: d, m (f16), 16 bytes of nibbles; value = q·d + m.
func DequantizeQ4_1(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		x := src[b*20 : b*20+20]
		y := dst[b*32 : b*32+32]
		d, m := half(x), half(x[2:])
		qs := x[4:20]
		for j := 0; j < 16; j++ {
			y[j] = float32(float32(qs[j]&0x0f)*d) + m
			y[j+16] = float32(float32(qs[j]>>4)*d) + m
		}
	}
}

// DequantizeQ5_0 expands Q5_0 blocks: d (f16), qh (32 high bits, LE), 16
// bytes of low nibbles; value = (q − 16)·d.
func DequantizeQ5_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		x := src[b*22 : b*22+22]
		y := dst[b*32 : b*32+32]
		d := half(x)
		qh := binary.LittleEndian.Uint32(x[2:])
		qs := x[6:22]
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(int(qs[j]&0x0f|h0)-16) * d
			y[j+16] = float32(int(qs[j]>>4|h1)-16) * d
		}
	}
}

// DequantizeQ5_1 expands Q5_1 blocks: d, m (f16), qh, 16 bytes of low
// nibbles; value = q·d + m.
func DequantizeQ5_1(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		x := src[b*24 : b*24+24]
		y := dst[b*32 : b*32+32]
		d, m := half(x), half(x[2:])
		qh := binary.LittleEndian.Uint32(x[4:])
		qs := x[8:24]
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(float32(qs[j]&0x0f|h0)*d) + m
			y[j+16] = float32(float32(qs[j]>>4|h1)*d) + m
		}
	}
}

// DequantizeQ8_0 expands Q8_0 blocks: d (f16), 32 int8; value = q·d.
func DequantizeQ8_0(dst []float32, src []byte) { dequantizeQ8(dst, src, 34) }

// DequantizeQ8_1 expands Q8_1 blocks: d, s (f16; s = d·Σq, unused here), 32
// int8; value = q·d. ggml itself has no to_float for Q8_1 (it is only ever a
// dot-product operand), so this follows the format, not an oracle.
func DequantizeQ8_1(dst []float32, src []byte) { dequantizeQ8(dst, src, 36) }

// dequantizeQ8 expands blocks of size bytes that start with d (f16) and end
// with 32 int8 (Q8_0, Q8_1); value = q·d.
func dequantizeQ8(dst []float32, src []byte, size int) {
	for b := 0; b < len(dst)/32; b++ {
		x := src[b*size : b*size+size]
		y := dst[b*32 : b*32+32]
		d := half(x)
		for j, q := range x[size-32 : size] {
			y[j] = float32(int8(q)) * d
		}
	}
}

// DequantizeQ2K expands Q2_K super-blocks: scales[16] (low nibble scale,
// high nibble min), qs[64] (2-bit), d, dmin (f16). Sub-block s of 16 values
// is d·sc·q − dmin·m.
func DequantizeQ2K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		x := src[b*84 : b*84+84]
		y := dst[b*QK_K : b*QK_K+QK_K]
		scales, q := x[0:16], x[16:80]
		d, min := half(x[80:]), half(x[82:])
		is, o := 0, 0
		for n := 0; n < QK_K; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for h := 0; h < 2; h++ {
					sc := scales[is]
					is++
					dl, ml := d*float32(sc&0x0f), min*float32(sc>>4)
					for l := 16 * h; l < 16*h+16; l++ {
						y[o] = float32(dl*float32((q[l]>>shift)&3)) - ml
						o++
					}
				}
			}
			q = q[32:]
		}
	}
}

// q3Scales unpacks the twelve bytes of Q3_K scales into sixteen 6-bit values
// (still offset by 32), as ggml's kmask shuffle does.
func q3Scales(packed []byte) [16]int8 {
	a0 := binary.LittleEndian.Uint32(packed[0:])
	a1 := binary.LittleEndian.Uint32(packed[4:])
	tmp := binary.LittleEndian.Uint32(packed[8:])
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	aux := [4]uint32{
		a0&kmask2 | (tmp>>0&kmask1)<<4,
		a1&kmask2 | (tmp>>2&kmask1)<<4,
		a0>>4&kmask2 | (tmp>>4&kmask1)<<4,
		a1>>4&kmask2 | (tmp>>6&kmask1)<<4,
	}
	var s [16]int8
	for i, a := range aux {
		for k := 0; k < 4; k++ {
			s[4*i+k] = int8(a >> (8 * k))
		}
	}
	return s
}

// DequantizeQ3K expands Q3_K super-blocks: hmask[32] (high bits), qs[64]
// (low 2 bits), scales[12] (sixteen 6-bit scales offset by 32), d (f16).
// Value = d·(sc−32)·(q − 4 if its hmask bit is clear).
func DequantizeQ3K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		x := src[b*110 : b*110+110]
		y := dst[b*QK_K : b*QK_K+QK_K]
		hm, q := x[0:32], x[32:96]
		scales := q3Scales(x[96:108])
		dAll := half(x[108:])
		is, o := 0, 0
		m := byte(1)
		for n := 0; n < QK_K; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for h := 0; h < 2; h++ {
					dl := dAll * float32(int(scales[is])-32)
					is++
					for l := 16 * h; l < 16*h+16; l++ {
						v := int((q[l] >> shift) & 3)
						if hm[l]&m == 0 {
							v -= 4
						}
						y[o] = dl * float32(v)
						o++
					}
				}
				m <<= 1
			}
			q = q[32:]
		}
	}
}

// ScaleMinK4 unpacks scale and min j (0..7) from the twelve packed bytes of
// a Q4_K or Q5_K super-block (ggml's get_scale_min_k4).
func ScaleMinK4(j int, q []byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0x0f | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// DequantizeQ4K expands Q4_K super-blocks: d, dmin (f16), scales[12] (eight
// 6-bit scales and mins), qs[128]. Sub-block s of 32 values is
// (d·sc)·q − dmin·m, low nibbles first for each 64 values.
func DequantizeQ4K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		x := src[b*144 : b*144+144]
		y := dst[b*QK_K : b*QK_K+QK_K]
		d, min := half(x), half(x[2:])
		scales, q := x[4:16], x[16:144]
		for j, is := 0, 0; j < QK_K; j, is = j+64, is+2 {
			d1, m1 := subScaleMinK4(d, min, is, scales)
			d2, m2 := subScaleMinK4(d, min, is+1, scales)
			for l := 0; l < 32; l++ {
				y[j+l] = float32(d1*float32(q[l]&0x0f)) - m1
				y[j+32+l] = float32(d2*float32(q[l]>>4)) - m2
			}
			q = q[32:]
		}
	}
}

// subScaleMinK4 is sub-block is's scale d·sc and offset dmin·m in a Q4_K or
// Q5_K super-block.
func subScaleMinK4(d, dmin float32, is int, scales []byte) (float32, float32) {
	sc, m := ScaleMinK4(is, scales)
	return d * float32(sc), dmin * float32(m)
}

// DequantizeQ5K expands Q5_K super-blocks: d, dmin (f16), scales[12],
// qh[32] (fifth bits), qs[128] (low nibbles); value = (d·sc)·q − dmin·m.
func DequantizeQ5K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		x := src[b*176 : b*176+176]
		y := dst[b*QK_K : b*QK_K+QK_K]
		d, min := half(x), half(x[2:])
		scales, qh, ql := x[4:16], x[16:48], x[48:176]
		u1, u2 := byte(1), byte(2)
		for j, is := 0, 0; j < QK_K; j, is = j+64, is+2 {
			d1, m1 := subScaleMinK4(d, min, is, scales)
			d2, m2 := subScaleMinK4(d, min, is+1, scales)
			for l := 0; l < 32; l++ {
				q1, q2 := ql[l]&0x0f, ql[l]>>4
				if qh[l]&u1 != 0 {
					q1 += 16
				}
				if qh[l]&u2 != 0 {
					q2 += 16
				}
				y[j+l] = float32(d1*float32(q1)) - m1
				y[j+32+l] = float32(d2*float32(q2)) - m2
			}
			ql = ql[32:]
			u1 <<= 2
			u2 <<= 2
		}
	}
}

// DequantizeQ6K expands Q6_K super-blocks: ql[128] (low nibbles), qh[64]
// (high 2 bits), scales[16] (int8), d (f16); value = (d·sc)·(q − 32).
func DequantizeQ6K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		x := src[b*210 : b*210+210]
		y := dst[b*QK_K : b*QK_K+QK_K]
		ql, qh, sc := x[0:128], x[128:192], x[192:208]
		d := half(x[208:])
		for n := 0; n < QK_K; n += 128 {
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int(ql[l]&0x0f|(qh[l]>>0&3)<<4) - 32
				q2 := int(ql[l+32]&0x0f|(qh[l]>>2&3)<<4) - 32
				q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				y[n+l] = d * float32(int8(sc[is])) * float32(q1)
				y[n+l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				y[n+l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				y[n+l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
			ql, qh, sc = ql[64:], qh[32:], sc[8:]
		}
	}
}

// DequantizeQ8K expands Q8_K super-blocks: d (float32), qs[256] (int8),
// bsums[16] (int16, unused here); value = d·q.
func DequantizeQ8K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		x := src[b*292 : b*292+292]
		y := dst[b*QK_K : b*QK_K+QK_K]
		d := math.Float32frombits(binary.LittleEndian.Uint32(x))
		for j, q := range x[4 : 4+QK_K] {
			y[j] = d * float32(int8(q))
		}
	}
}
