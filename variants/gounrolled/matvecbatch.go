package gounrolled

// The batched decode products (matvec_batch) in Go: each super-block of a
// weight row is unpacked once — quants to bytes in value order, scales,
// d — and then dotted with every token's activations, so the weights are
// read once for the batch. A token's result is the same sequence of
// operations whatever else is in the call (the op's contract), and the
// one-row matvec's of this package (MatVecQ4K, MatVecQ6K) bit for bit.

// MatVecBatchQ4K computes dst[j*ldd+r] = W[r]·X[j] for Q4_K weights and
// Q8_K activations.
func MatVecBatchQ4K(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
	nb := k / qk
	rowBytes, xBytes := nb*q4KBytes, nb*q8KBytes
	var q [qk]int32
	for r := 0; r < rows; r++ {
		for j := 0; j < n; j++ {
			dst[j*ldd+r] = 0
		}
		for b := 0; b < nb; b++ {
			wb := w[r*rowBytes+b*q4KBytes : r*rowBytes+(b+1)*q4KBytes : r*rowBytes+(b+1)*q4KBytes]
			d, dmin := half(wb[0:]), half(wb[2:])
			sc, m := Q4KScales(wb[4:16])
			for c := 0; c < 4; c++ {
				qs := (*[32]byte)(wb[16+32*c:])
				lo, hi := (*[32]int32)(q[64*c:]), (*[32]int32)(q[64*c+32:])
				for l, v := range qs {
					lo[l], hi[l] = int32(v&15), int32(v>>4)
				}
			}
			for j := 0; j < n; j++ {
				xb := xq[j*xBytes+b*q8KBytes : j*xBytes+(b+1)*q8KBytes : j*xBytes+(b+1)*q8KBytes]
				dx := f32(xb)
				mins := q4KMins(&m, xb)
				var dot int32
				for g := 0; g < 8; g++ {
					qg, y := (*[32]int32)(q[32*g:]), (*[32]byte)(xb[q8KQsOff+32*g:])
					var s0, s1, s2, s3 int32
					for l := 0; l < 32; l += 4 {
						s0 += qg[l] * int32(int8(y[l]))
						s1 += qg[l+1] * int32(int8(y[l+1]))
						s2 += qg[l+2] * int32(int8(y[l+2]))
						s3 += qg[l+3] * int32(int8(y[l+3]))
					}
					dot += int32(sc[g]) * (s0 + s1 + s2 + s3)
				}
				dd, dm := d*dx, dmin*dx // as dotQ4K: the same float operations, the same bits
				dst[j*ldd+r] += dd*float32(dot) - dm*float32(mins)
			}
		}
	}
}

// MatVecBatchQ6K computes dst[j*ldd+r] = W[r]·X[j] for Q6_K weights and
// Q8_K activations.
func MatVecBatchQ6K(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
	nb := k / qk
	rowBytes, xBytes := nb*q6KBytes, nb*q8KBytes
	var q [qk]int32
	for r := 0; r < rows; r++ {
		for j := 0; j < n; j++ {
			dst[j*ldd+r] = 0
		}
		for b := 0; b < nb; b++ {
			wb := w[r*rowBytes+b*q6KBytes : r*rowBytes+(b+1)*q6KBytes : r*rowBytes+(b+1)*q6KBytes]
			d := half(wb[208:])
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
			sc := (*[16]byte)(wb[192:])
			for j := 0; j < n; j++ {
				xb := xq[j*xBytes+b*q8KBytes : j*xBytes+(b+1)*q8KBytes : j*xBytes+(b+1)*q8KBytes]
				var dot int32
				for g := 0; g < 16; g++ {
					qg, y := (*[16]int32)(q[16*g:]), (*[16]byte)(xb[q8KQsOff+16*g:])
					var s0, s1, s2, s3 int32
					for l := 0; l < 16; l += 4 {
						s0 += qg[l] * int32(int8(y[l]))
						s1 += qg[l+1] * int32(int8(y[l+1]))
						s2 += qg[l+2] * int32(int8(y[l+2]))
						s3 += qg[l+3] * int32(int8(y[l+3]))
					}
					dot += int32(int8(sc[g])) * (s0 + s1 + s2 + s3)
				}
				dd := d * f32(xb) // as dotQ6K
				dst[j*ldd+r] += dd * float32(dot)
			}
		}
	}
}
