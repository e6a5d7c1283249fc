package gounrolled

import "encoding/binary"

// MatVecQ4K computes dst[r] = W[r]·x for Q4_K weights and Q8_K activations.
func MatVecQ4K(dst []float32, w, xq []byte, k int) {
	matVecBlocks(dst, w, xq, k, qk, q4KBytes, q8KBytes, dotQ4K)
}

// MatVecQ6K computes dst[r] = W[r]·x for Q6_K weights and Q8_K activations.
func MatVecQ6K(dst []float32, w, xq []byte, k int) {
	matVecBlocks(dst, w, xq, k, qk, q6KBytes, q8KBytes, dotQ6K)
}

// matVecBlocks computes dst[r] = W[r]·x for block-quantized weights and
// activations (values per block; wBytes and xBytes a block of each): dot
// is one block's product, the products are summed in block order.
func matVecBlocks(dst []float32, w, xq []byte, k, values, wBytes, xBytes int, dot func(wb, xb []byte) float32) {
	nb := k / values
	rowBytes := nb * wBytes
	x := xq[:nb*xBytes]
	for r := range dst {
		row := w[r*rowBytes : (r+1)*rowBytes]
		var sum float32
		for b := 0; b < nb; b++ {
			wb := row[b*wBytes : (b+1)*wBytes : (b+1)*wBytes]
			xb := x[b*xBytes : (b+1)*xBytes : (b+1)*xBytes]
			sum += dot(wb, xb)
		}
		dst[r] = sum
	}
}

// dotQ4K is a Q4_K super-block's product with a Q8_K block.
func dotQ4K(wb, xb []byte) float32 {
	dx := f32(xb)
	d := half(wb[0:]) * dx
	dmin := half(wb[2:]) * dx
	sc, m := Q4KScales(wb[4:16])

	mins := q4KMins(&m, xb)

	var dot int32
	for c := 0; c < 4; c++ {
		// Array pointers: constant indices below need no bounds checks.
		q := (*[32]byte)(wb[16+32*c:])
		y := (*[64]byte)(xb[q8KQsOff+64*c:])
		var lo0, lo1, hi0, hi1 int32
		for l := 0; l < 32; l += 4 {
			b0, b1, b2, b3 := int32(q[l]), int32(q[l+1]), int32(q[l+2]), int32(q[l+3])
			lo0 += (b0&15)*int32(int8(y[l])) + (b2&15)*int32(int8(y[l+2]))
			lo1 += (b1&15)*int32(int8(y[l+1])) + (b3&15)*int32(int8(y[l+3]))
			hi0 += (b0>>4)*int32(int8(y[32+l])) + (b2>>4)*int32(int8(y[34+l]))
			hi1 += (b1>>4)*int32(int8(y[33+l])) + (b3>>4)*int32(int8(y[35+l]))
		}
		dot += int32(sc[2*c])*(lo0+lo1) + int32(sc[2*c+1])*(hi0+hi1)
	}
	return d*float32(dot) - dmin*float32(mins)
}

// q4KMins is Σ m[j]·(bsums[2j] + bsums[2j+1]) over a Q4_K super-block's
// eight sub-block mins m and the Q8_K block xb's sixteen bsums: the integer
// mins term, shared by the one-row and the batched Q4_K products so that
// both keep the same bits.
func q4KMins(m *[8]uint8, xb []byte) int32 {
	sums := xb[q8KSumsOff:]
	var mins int32
	for j := 0; j < 8; j++ {
		bs := int32(int16(binary.LittleEndian.Uint16(sums[4*j:]))) +
			int32(int16(binary.LittleEndian.Uint16(sums[4*j+2:])))
		mins += int32(m[j]) * bs
	}
	return mins
}

// dotQ6K is a Q6_K super-block's product with a Q8_K block.
func dotQ6K(wb, xb []byte) float32 {
	d := half(wb[208:]) * f32(xb)
	var dot int32
	for h := 0; h < 2; h++ {
		ql := wb[64*h : 64*h+64 : 64*h+64]
		qh := wb[128+32*h : 160+32*h : 160+32*h]
		sc := wb[192+8*h : 200+8*h : 200+8*h]
		y := xb[q8KQsOff+128*h : q8KQsOff+128*h+128 : q8KQsOff+128*h+128]
		for g := 0; g < 2; g++ { // 16-value sub-blocks: l in [16g, 16g+16)
			var s1, s2, s3, s4 int32
			for l := 16 * g; l < 16*g+16; l++ {
				hb := qh[l]
				s1 += (int32(ql[l]&15|(hb&3)<<4) - 32) * int32(int8(y[l]))
				s2 += (int32(ql[l+32]&15|(hb>>2&3)<<4) - 32) * int32(int8(y[l+32]))
				s3 += (int32(ql[l]>>4|(hb>>4&3)<<4) - 32) * int32(int8(y[l+64]))
				s4 += (int32(ql[l+32]>>4|(hb>>6)<<4) - 32) * int32(int8(y[l+96]))
			}
			dot += int32(int8(sc[g]))*s1 + int32(int8(sc[g+2]))*s2 +
				int32(int8(sc[g+4]))*s3 + int32(int8(sc[g+6]))*s4
		}
	}
	return d * float32(dot)
}

// MatVecQ8_0 computes dst[r] = W[r]·x for Q8_0 weights and Q8_0 activations.
func MatVecQ8_0(dst []float32, w, xq []byte, k int) {
	matVecBlocks(dst, w, xq, k, q80Values, q80Bytes, q80Bytes, dotQ8_0)
}

// dotQ8_0 is a Q8_0 block's product with a Q8_0 block.
func dotQ8_0(wb, xb []byte) float32 {
	w, x := (*[q80Bytes]byte)(wb), (*[q80Bytes]byte)(xb)
	var s0, s1, s2, s3 int32
	for j := 2; j < q80Bytes; j += 4 {
		s0 += int32(int8(w[j])) * int32(int8(x[j]))
		s1 += int32(int8(w[j+1])) * int32(int8(x[j+1]))
		s2 += int32(int8(w[j+2])) * int32(int8(x[j+2]))
		s3 += int32(int8(w[j+3])) * int32(int8(x[j+3]))
	}
	return half(wb) * half(xb) * float32(s0+s1+s2+s3)
}

// MatVecF32 computes dst[r] = W[r]·x for float32 weights and activations.
func MatVecF32(dst []float32, w, xq []byte, k int) {
	x := xq[: 4*k : 4*k]
	for r := range dst {
		row := w[4*k*r : 4*k*(r+1) : 4*k*(r+1)]
		var s0, s1, s2, s3 float32
		i := 0
		for ; i+16 <= 4*k; i += 16 {
			a, b := (*[16]byte)(row[i:]), (*[16]byte)(x[i:])
			s0 += f32(a[0:]) * f32(b[0:])
			s1 += f32(a[4:]) * f32(b[4:])
			s2 += f32(a[8:]) * f32(b[8:])
			s3 += f32(a[12:]) * f32(b[12:])
		}
		for ; i < 4*k; i += 4 {
			s0 += f32(row[i:]) * f32(x[i:])
		}
		dst[r] = (s0 + s1) + (s2 + s3)
	}
}

// MatVecF16 computes dst[r] = W[r]·x for half-precision weights and
// activations, accumulating in float32.
func MatVecF16(dst []float32, w, xq []byte, k int) {
	x := xq[: 2*k : 2*k]
	for r := range dst {
		row := w[2*k*r : 2*k*(r+1) : 2*k*(r+1)]
		var s0, s1, s2, s3 float32
		i := 0
		for ; i+8 <= 2*k; i += 8 {
			a, b := (*[8]byte)(row[i:]), (*[8]byte)(x[i:])
			s0 += half(a[0:]) * half(b[0:])
			s1 += half(a[2:]) * half(b[2:])
			s2 += half(a[4:]) * half(b[4:])
			s3 += half(a[6:]) * half(b[6:])
		}
		for ; i < 2*k; i += 2 {
			s0 += half(row[i:]) * half(x[i:])
		}
		dst[r] = (s0 + s1) + (s2 + s3)
	}
}

// MatVecBF16 computes dst[r] = W[r]·x for bfloat16 weights and activations,
// accumulating in float32.
func MatVecBF16(dst []float32, w, xq []byte, k int) {
	x := xq[: 2*k : 2*k]
	for r := range dst {
		row := w[2*k*r : 2*k*(r+1) : 2*k*(r+1)]
		var s0, s1, s2, s3 float32
		i := 0
		for ; i+8 <= 2*k; i += 8 {
			a, b := (*[8]byte)(row[i:]), (*[8]byte)(x[i:])
			s0 += bf16(a[0:]) * bf16(b[0:])
			s1 += bf16(a[2:]) * bf16(b[2:])
			s2 += bf16(a[4:]) * bf16(b[4:])
			s3 += bf16(a[6:]) * bf16(b[6:])
		}
		for ; i < 2*k; i += 2 {
			s0 += bf16(row[i:]) * bf16(x[i:])
		}
		dst[r] = (s0 + s1) + (s2 + s3)
	}
}
