package amx

import (
	"encoding/binary"
	"math"

	"github.com/damascus-llm/damascus/quant"
)

// Geometry of the tile program.
const (
	qk         = quant.QK_K    // values per super-block
	tileRows   = 16            // rows of a tile: weight rows or tokens
	chunkK     = 64            // k per tile product (bytes per tile row)
	chunks     = qk / chunkK   // tile products per super-block
	tileBytes  = tileRows * 64 // one 16×64-byte tile
	pairTokens = 2 * tileRows  // tokens per pass: two token tiles

	q4kBytes = 144
	q6kBytes = 210
	q5kBytes = 176
	q8kBytes = 292
)

// Weight panel of one row tile, per super-block (wSBBytes each, super-blocks
// back to back):
//
//	[chunk 0..3][lo, hi][16 k-quads][16 rows][4 bytes]   the int8 tiles
//	[16]float32  d per row
//	[16]float32  dmin per row (Q4_K; unused by Q6_K)
//	[8][16]{int16, int16}  per row, the coefficients of block sums 2h, 2h+1
//	                       (Q4_K: mins m_2h, m_2h+1 of the sums of 32 in
//	                       pairs 0-3, pairs 4-7 zero; Q6_K: 8192 + 32·sc)
const (
	wTiles   = 0
	wD       = chunks * 2 * tileBytes
	wDmin    = wD + 4*tileRows
	wCoef    = wDmin + 4*tileRows
	wSBBytes = wCoef + 8*4*tileRows
)

// Activation pack of one token pair, per super-block (aSBBytes each):
//
//	[chunk 0..3][token tile 0, 1][16 tokens][64 bytes]   Q8_K quants
//	[32]float32  dx per token
//	[32][16]int16 Q8_K bsums per token, or for Q4_K (sum32) the eight sums
//	              of 32 values in the first half: sums 2h and 2h+1 in dword h
//
// Tokens past n are zero (dx = 0), so they add nothing and are not stored.
const (
	aTiles   = 0
	aD       = chunks * 2 * tileBytes
	aBsums   = aD + 4*pairTokens
	aSBBytes = aBsums + 32*pairTokens
)

// The weight digits: p = 128·hi + lo with lo, hi in 0..127, so both tiles
// are valid unsigned (TDPBSUD, VPDPBUSD) operands.
const digitShift = 7

// q6Offset makes Q6_K's signed products sc·q non-negative: p = sc·q + 8192
// lies in 128..16193, two 7-bit digits. The offset comes back out through
// the block sums (coefficient 8192 + 32·sc per 16 values also removes the
// −32 of the quants).
const q6Offset = 8192

// packActivationsGo writes Q8_K rows [j0, j1) of the n rows of nb
// super-blocks in xq into the activation pack of all n rows, pairs ⌈n/32⌉ ×
// nb × aSBBytes bytes; j0 is a multiple of pairTokens, so ranges split at
// such multiples write disjoint bytes. With sum32 the block sums are those
// of 32 values (Q4_K's sub-blocks), halving the epilogue's VPDPWSSDs, and
// the second half of each token's sums is left as it was. packActivations
// is this, or its AVX-512 twin where that runs.
func packActivationsGo(pack, xq []byte, j0, j1, n, nb int, sum32 bool) {
	rowBytes := nb * q8kBytes
	clearPadding(pack, j1, n, nb)
	for t := j0; t < j1; t++ {
		p, tp := t/pairTokens, t%pairTokens
		tileOff := (tp/tileRows)*tileBytes + (tp%tileRows)*chunkK
		row := xq[t*rowBytes : (t+1)*rowBytes]
		for sb := 0; sb < nb; sb++ {
			blk := row[sb*q8kBytes : (sb+1)*q8kBytes]
			dst := pack[(p*nb+sb)*aSBBytes : (p*nb+sb+1)*aSBBytes]
			for c := 0; c < chunks; c++ {
				copy(dst[aTiles+c*2*tileBytes+tileOff:][:chunkK], blk[4+c*chunkK:])
			}
			copy(dst[aD+4*tp:][:4], blk[0:4])
			if !sum32 {
				copy(dst[aBsums+32*tp:][:32], blk[260:292])
				continue
			}
			for g := 0; g < 8; g++ {
				s := int16(binary.LittleEndian.Uint16(blk[260+4*g:])) + int16(binary.LittleEndian.Uint16(blk[262+4*g:]))
				binary.LittleEndian.PutUint16(dst[aBsums+32*tp+2*g:], uint16(s))
			}
		}
	}
}

// clearPadding zeroes the last pair of the pack when the range ending at j1
// includes its first token and n leaves padding tokens in it: they must add
// nothing. Cleared before the pair's tokens are written.
func clearPadding(pack []byte, j1, n, nb int) {
	pairs := (n + pairTokens - 1) / pairTokens
	if n%pairTokens != 0 && j1 == n {
		clear(pack[(pairs-1)*nb*aSBBytes : pairs*nb*aSBBytes])
	}
}

// activationPackBytes is the size of the activation pack of n tokens of nb
// super-blocks.
func activationPackBytes(n, nb int) int { return (n + pairTokens - 1) / pairTokens * nb * aSBBytes }

// digitTable[sc][q] is q·sc split into its two digits, lo | hi<<8.
var digitTable = func() (t [64][16]uint16) {
	for sc := range t {
		for q := range t[sc] {
			p := q * sc
			t[sc][q] = uint16(p&127) | uint16(p>>digitShift)<<8
		}
	}
	return t
}()

// put stores the digits of the weight of row r at k (0..255) of one
// super-block's panel.
func put(panel []byte, r, k int, digits uint16) {
	c, kk := k/chunkK, k%chunkK
	off := wTiles + c*2*tileBytes + (kk/4)*64 + r*4 + kk%4
	panel[off] = byte(digits)
	panel[off+tileBytes] = byte(digits >> 8)
}

func putFloat(b []byte, f float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(f)) }

func putCoef(panel []byte, h, r int, a, b int16) {
	binary.LittleEndian.PutUint32(panel[wCoef+h*64+r*4:], uint32(uint16(a))|uint32(uint16(b))<<16)
}

// eachSuperBlock calls f for each super-block that a reference packer
// writes: rows rows of nb super-blocks (blkBytes each), super-blocks sb0 to
// sb0+nsb, with its row r, its bytes blk and its super-block's panel p
// (sbBytes of panel).
func eachSuperBlock(panel, w []byte, rows, nb, sb0, nsb, blkBytes, sbBytes int, f func(r int, blk, p []byte)) {
	for r := 0; r < rows; r++ {
		for s := 0; s < nsb; s++ {
			f(r, w[(r*nb+sb0+s)*blkBytes:][:blkBytes], panel[s*sbBytes:(s+1)*sbBytes])
		}
	}
}

// q6kQuants are the four 6-bit quants at position l of a Q6_K half (its ql
// at l0, its qh at h0), one per 32-value quarter.
func q6kQuants(l0, h0 []byte, l int) [4]byte {
	return [4]byte{
		l0[l]&15 | (h0[l]&3)<<4,
		l0[l+32]&15 | (h0[l]>>2&3)<<4,
		l0[l]>>4 | (h0[l]>>4&3)<<4,
		l0[l+32]>>4 | (h0[l]>>6&3)<<4,
	}
}

// packQ4K writes the panel of rows (≤ 16) Q4_K rows, super-blocks sb0 to
// sb0+nsb of rows of nb super-blocks, into panel (nsb × wSBBytes). Rows past
// rows are zero.
func packQ4K(panel, w []byte, rows, nb, sb0, nsb int) {
	if rows < tileRows {
		clear(panel[:nsb*wSBBytes])
	}
	eachSuperBlock(panel, w, rows, nb, sb0, nsb, q4kBytes, wSBBytes, func(r int, blk, p []byte) {
		putFloat(p[wD+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk)))
		putFloat(p[wDmin+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk[2:])))
		scales, qs := blk[4:16], blk[16:144]
		for c := 0; c < chunks; c++ {
			scLo, m0 := quant.ScaleMinK4(2*c, scales)
			scHi, m1 := quant.ScaleMinK4(2*c+1, scales)
			putCoef(p, c, r, int16(m0), int16(m1))
			putCoef(p, c+4, r, 0, 0)
			lo, hi := &digitTable[scLo], &digitTable[scHi]
			for j, b := range qs[32*c : 32*c+32] {
				put(p, r, c*chunkK+j, lo[b&15])
				put(p, r, c*chunkK+32+j, hi[b>>4])
			}
		}
	})
}

// packQ5K is packQ4K for Q5_K rows: the same header and panel, each quant
// joined with its fifth bit from qh (q up to 31, so hi digits up to 15).
func packQ5K(panel, w []byte, rows, nb, sb0, nsb int) {
	if rows < tileRows {
		clear(panel[:nsb*wSBBytes])
	}
	digits := func(q, sc int) uint16 { p := q * sc; return uint16(p&127) | uint16(p>>digitShift)<<8 }
	eachSuperBlock(panel, w, rows, nb, sb0, nsb, q5kBytes, wSBBytes, func(r int, blk, p []byte) {
		putFloat(p[wD+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk)))
		putFloat(p[wDmin+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk[2:])))
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
		for c := 0; c < chunks; c++ {
			scLo, m0 := quant.ScaleMinK4(2*c, scales)
			scHi, m1 := quant.ScaleMinK4(2*c+1, scales)
			putCoef(p, c, r, int16(m0), int16(m1))
			putCoef(p, c+4, r, 0, 0)
			for j, b := range qs[32*c : 32*c+32] {
				put(p, r, c*chunkK+j, digits(int(b&15|(qh[j]>>(2*c)&1)<<4), int(scLo)))
				put(p, r, c*chunkK+32+j, digits(int(b>>4|(qh[j]>>(2*c+1)&1)<<4), int(scHi)))
			}
		}
	})
}

// packQ6K is packQ4K for Q6_K rows.
func packQ6K(panel, w []byte, rows, nb, sb0, nsb int) {
	if rows < tileRows {
		clear(panel[:nsb*wSBBytes])
	}
	eachSuperBlock(panel, w, rows, nb, sb0, nsb, q6kBytes, wSBBytes, func(r int, blk, p []byte) {
		d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk[208:]))
		putFloat(p[wD+4*r:], d)
		putFloat(p[wDmin+4*r:], d)
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		for h := 0; h < 8; h++ {
			putCoef(p, h, r, q6Offset+32*int16(int8(sc[2*h])), q6Offset+32*int16(int8(sc[2*h+1])))
		}
		for half := 0; half < 2; half++ {
			l0, h0 := ql[64*half:], qh[32*half:]
			for l := 0; l < 32; l++ {
				for quarter, qv := range q6kQuants(l0, h0, l) {
					k := 128*half + 32*quarter + l
					v := int(int8(sc[k/16]))*int(qv) + q6Offset
					put(p, r, k, uint16(v&127)|uint16(v>>digitShift)<<8)
				}
			}
		}
	})
}
