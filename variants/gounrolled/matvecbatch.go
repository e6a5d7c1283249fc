package gounrolled

// The batched decode products (matvec_batch) in Go: each super-block of a
// weight row is unpacked once — quants to int32s in value order, scales,
// d — and then dotted with every token's activations, so the weights are
// read once for the batch. A token's result is the same sequence of
// operations whatever else is in the call (the op's contract), and the
// one-row matvec's of this package (MatVecQ4K, MatVecQ6K) bit for bit.

// MatVecBatchQ4K computes dst[j*ldd+r] = W[r]·X[j] for Q4_K weights and
// Q8_K activations.
func MatVecBatchQ4K(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
	var q [qk]int32
	var d, dmin float32
	var sc, m [8]uint8
	unpack := func(wb []byte) {
		d, dmin = half(wb[0:]), half(wb[2:])
		sc, m = Q4KScales(wb[4:16])
		for c := 0; c < 4; c++ {
			qs := (*[32]byte)(wb[16+32*c:])
			lo, hi := (*[32]int32)(q[64*c:]), (*[32]int32)(q[64*c+32:])
			for l, v := range qs {
				lo[l], hi[l] = int32(v&15), int32(v>>4)
			}
		}
	}
	product := func(xb []byte) float32 {
		dx := f32(xb)
		mins := q4KMins(&m, xb)
		var sums [16]int32
		groupSums16(&sums, &q, xb)
		var dot int32
		for g, s := range sc { // 32-value sub-blocks: two groups each
			dot += int32(s) * (sums[2*g] + sums[2*g+1])
		}
		dd, dm := d*dx, dmin*dx // as dotQ4K: the same float operations, the same bits
		return dd*float32(dot) - dm*float32(mins)
	}
	matVecBatchK(dst, ldd, w, rows, xq, n, k, q4KBytes, unpack, product)
}

// MatVecBatchQ6K computes dst[j*ldd+r] = W[r]·X[j] for Q6_K weights and
// Q8_K activations.
func MatVecBatchQ6K(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
	var q [qk]int32
	var d float32
	var sc *[16]byte
	unpack := func(wb []byte) {
		d = half(wb[208:])
		for h := 0; h < 2; h++ {
			ql := (*[64]byte)(wb[64*h:])
			qh := (*[32]byte)(wb[128+32*h:])
			v := (*[128]int32)(q[128*h:])
			for l := 0; l < 32; l++ {
				hb := qh[l]
				v[l] = int32(ql[l]&15|(hb&3)<<4) - 32
				v[l+32] = int32(ql[l+32]&15|(hb>>2&3)<<4) - 32
				v[l+64] = int32(ql[l]>>4|(hb>>4&3)<<4) - 32
				v[l+96] = int32(ql[l+32]>>4|(hb>>6)<<4) - 32
			}
		}
		sc = (*[16]byte)(wb[192:])
	}
	product := func(xb []byte) float32 {
		var sums [16]int32
		groupSums16(&sums, &q, xb)
		var dot int32
		for g, s := range sc {
			dot += int32(int8(s)) * sums[g]
		}
		dd := d * f32(xb) // as dotQ6K
		return dd * float32(dot)
	}
	matVecBatchK(dst, ldd, w, rows, xq, n, k, q6KBytes, unpack, product)
}

// matVecBatchK is the frame of the batched K-quant products: for each
// weight row and super-block (blockBytes), unpack reads the block once,
// then product gives its product with each token's Q8_K block, added to that
// token's output.
func matVecBatchK(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k, blockBytes int,
	unpack func(wb []byte), product func(xb []byte) float32) {
	nb := k / qk
	rowBytes, xBytes := nb*blockBytes, nb*q8KBytes
	for r := 0; r < rows; r++ {
		for j := 0; j < n; j++ {
			dst[j*ldd+r] = 0
		}
		for b := 0; b < nb; b++ {
			unpack(w[r*rowBytes+b*blockBytes : r*rowBytes+(b+1)*blockBytes : r*rowBytes+(b+1)*blockBytes])
			for j := 0; j < n; j++ {
				dst[j*ldd+r] += product(xq[j*xBytes+b*q8KBytes : j*xBytes+(b+1)*q8KBytes : j*xBytes+(b+1)*q8KBytes])
			}
		}
	}
}

// groupSums16 sets sums[g] to the integer dot product of the unpacked quants
// q[16g:16g+16] with the Q8_K block xb's quants of the same values. Integer
// sums are exact, so the 32-value sub-blocks of Q4_K may add two of them.
func groupSums16(sums *[16]int32, q *[qk]int32, xb []byte) {
	for g := range sums {
		qg, y := (*[16]int32)(q[16*g:]), (*[16]byte)(xb[q8KQsOff+16*g:])
		var s0, s1, s2, s3 int32
		for l := 0; l < 16; l += 4 {
			s0 += qg[l] * int32(int8(y[l]))
			s1 += qg[l+1] * int32(int8(y[l+1]))
			s2 += qg[l+2] * int32(int8(y[l+2]))
			s3 += qg[l+3] * int32(int8(y[l+3]))
		}
		sums[g] = s0 + s1 + s2 + s3
	}
}
