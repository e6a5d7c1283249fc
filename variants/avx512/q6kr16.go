package avx512

import (
	"encoding/binary"

	"github.com/damascus-llm/damascus/quant"
)

// Q6_K rows interleaved 16 to a vector: the q4kr16.go experiment for the
// other K-quant of Q4_K_M files (the lm_head and some V and down
// matrices). Layout of 16 rows × one super-block (Q6KR16Bytes bytes, the
// same 210 a row and super-block as Q6_K), weights q as stored, 0..63
// (the weight is d·scale·(q − 32)):
//
//	  0  d[16]        f16, row r at 2r
//	 32  sc[16][16]   int8, sub-block s (16 weights) row r at 16s+r
//	288  per sub-block s, 192 bytes at 288+192s, so the weights stream
//	     front to back (three streams a block ran at a third of the
//	     bandwidth on Zen 5):
//	       +0, +64   half h: byte 4r+i holds the low 4 bits of row r's
//	                 weight 16s+8h+i in its low nibble and of 16s+8h+4+i
//	                 in its high
//	       +128      byte 4r+i holds the top 2 bits of row r's weight
//	                 16s+4g+i at bits 2g, g = 0..3
const Q6KR16Bytes = 32 + 256 + 16*3*64 // 3360

// RepackQ6KR16 lays out rows Q6_K rows of k values (src, as stored) in the
// interleaved layout (the last group padded).
func RepackQ6KR16(dst, src []byte, rows, k int) error {
	return repackR16("q6k-r16", dst, src, rows, k, 210, Q6KR16Bytes, func(out []byte, r int, blk []byte) {
		copy(out[2*r:], blk[208:210])
		for s := range 16 {
			out[32+16*s+r] = blk[192+s]
		}
		q6kR16Quants(out[288:], r, blk)
	})
}

// q6kR16Quants writes row r's quants (blk's ql and qh) into a group's 16
// sub-blocks of 192 bytes, 4 bytes a row in each of three lines: values
// 0–3 | 4–7 and 8–11 | 12–15 as nibble pairs, then the four 2-bit high
// parts of values i, 4+i, 8+i, 12+i. Sub-block s (within its half of 128
// values, s%8 = 2·quarter + which 16) is 16 consecutive bytes of ql shifted
// by 0 or 4 and of qh shifted by 2·quarter, so each line's words are two
// 8-byte words masked and shifted (q6kR16QuantsBytes in the tests spells
// it out byte by byte).
func q6kR16Quants(subs []byte, r int, blk []byte) {
	const lo, hi2 = 0x0F0F0F0F0F0F0F0F, 0x0303030303030303
	subs = subs[:16*192]
	for half := range 2 {
		ql, qh := blk[64*half:64*half+64], blk[128+32*half:128+32*half+32]
		for q := range 8 { // sub-block 8·half + q: quarter q/2, its values 16·(q%2)…
			quarter, l0 := uint(q/2), 16*(q%2)
			at := int(quarter&1)*32 + l0
			lsh, hsh := 4*(quarter>>1), 2*quarter
			l0w := binary.LittleEndian.Uint64(ql[at:]) >> lsh & lo
			l1w := binary.LittleEndian.Uint64(ql[at+8:]) >> lsh & lo
			h0w := binary.LittleEndian.Uint64(qh[l0:]) >> hsh & hi2
			h1w := binary.LittleEndian.Uint64(qh[l0+8:]) >> hsh & hi2
			sub := subs[192*(8*half+q):][:192]
			binary.LittleEndian.PutUint32(sub[4*r:], uint32(l0w)|uint32(l0w>>32)<<4)
			binary.LittleEndian.PutUint32(sub[64+4*r:], uint32(l1w)|uint32(l1w>>32)<<4)
			binary.LittleEndian.PutUint32(sub[128+4*r:], uint32(h0w)|uint32(h0w>>32)<<2|uint32(h1w)<<4|uint32(h1w>>32)<<6)
		}
	}
}

// Q6KR16ActBytes is the activations of one super-block as q6kr16Dot reads
// them: the 256 quants, 32 × each sub-block's sum as int32 (the stored
// values' offset), d.
const Q6KR16ActBytes = 256 + 64 + 16

// PrepareQ6KR16 lays out Q8_K activations (xq, k values) for Q6KR16MatVec.
func PrepareQ6KR16(dst, xq []byte, k int) {
	prepareR16(dst, xq, k, Q6KR16ActBytes, 320, func(out, bsums []byte) {
		for s := range 16 {
			sum := int32(int16(binary.LittleEndian.Uint16(bsums[2*s:])))
			binary.LittleEndian.PutUint32(out[4*s:], uint32(32*sum))
		}
	})
}

// Q6KR16MatVec computes dst[r] = W[r]·x for the rows of w (interleaved,
// len(dst) a multiple of 16) against x laid out by PrepareQ6KR16,
// prefetching the weights dist bytes ahead (0: no software prefetch).
func Q6KR16MatVec(dst []float32, w, xr []byte, k, dist int) {
	if len(dst) == 0 {
		return
	}
	q6kr16Dot(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/Q4KR16Rows, dist)
}

// DequantizeRowQ6KR16 expands row r of a matrix of k columns in the
// interleaved Q6_K layout (w) into dst (k values), as quant.Dequantize
// expands the stored row: d·sc·(q − 32).
func DequantizeRowQ6KR16(dst []float32, w []byte, r, k int) {
	nb, rr := k/quant.QK_K, r%Q4KR16Rows
	for b := range nb {
		g := w[((r/Q4KR16Rows)*nb+b)*Q6KR16Bytes:][:Q6KR16Bytes]
		d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[2*rr:]))
		y := dst[b*quant.QK_K:][:quant.QK_K]
		for s := range 16 {
			ds := d * float32(int8(g[32+16*s+rr]))
			sub := g[288+192*s:]
			for i := range 4 {
				top := sub[128+4*rr+i]
				for h := range 2 {
					v := sub[64*h+4*rr+i]
					lo := int(v&15) | int(top>>(2*(2*h))&3)<<4
					hi := int(v>>4) | int(top>>(2*(2*h+1))&3)<<4
					y[16*s+8*h+i] = ds * float32(lo-32)
					y[16*s+8*h+4+i] = ds * float32(hi-32)
				}
			}
		}
	}
}
