package amx

import (
	"encoding/binary"

	"github.com/damascus-llm/damascus/quant"
)

// The sub-block-sum VNNI GEMM (avx512-vnni-sub, issue 19 item 5): no digit
// split. VPDPBUSD multiplies the raw unsigned quants (Q4_K 0..15, Q6_K
// 0..63) by the signed Q8_K activations into one int32 sum per sub-block
// (32 values for Q4_K, 16 for Q6_K) and row, which is then multiplied by
// the row's sub-block scale (VPMULLD) and added into a per-super-block
// int32 sum, as ggml's Q4_K×Q8_K dot does. Each VPDPBUSD is one 64-MAC
// product instead of the two of the digit tiles. Register block: 16 rows
// (one per dword lane) × subTokens tokens, activation dwords broadcast.
const subTokens = 12

// Weight panel of one row tile, per super-block (Q4_K subQ4Bytes, Q6_K
// subQ6Bytes, super-blocks back to back):
//
//	[64 k-quads][16 rows][4 bytes]   raw quants, k-quad i = k 4i..4i+3
//	[nsub][16]int32                  sub-block scales (Q4_K 8, Q6_K 16)
//	[npair][16]{int16, int16}        coefficients of block-sum pairs:
//	                                 Q4_K (m_2h, m_2h+1) of the sums of
//	                                 32, Q6_K (−32·sc_2h, −32·sc_2h+1) of
//	                                 the sums of 16 (the quants' −32)
//	[16]float32 d, then (Q4_K) [16]float32 dmin
const (
	sQuants    = 0
	sScales    = 64 * 64
	sQ4Coef    = sScales + 8*64
	sQ4D       = sQ4Coef + 4*64
	sQ4Dmin    = sQ4D + 64
	subQ4Bytes = sQ4Dmin + 64
	sQ6Coef    = sScales + 16*64
	sQ6D       = sQ6Coef + 8*64
	subQ6Bytes = sQ6D + 64
)

// Activation pack of one block of subTokens tokens, per super-block
// (subActBytes each, super-blocks back to back, then the next block):
//
//	[4 chunks][subTokens tokens][64 bytes]  Q8_K quants (k 64c..64c+63)
//	[subTokens]float32                      dx
//	[subTokens][16]int16                    Q8_K bsums (sums of 16), or for
//	                                        Q4_K the eight sums of 32
//
// Tokens past n are zero (dx = 0).
const (
	saD         = 4 * subTokens * 64
	saBsums     = saD + 4*subTokens
	subActBytes = (saBsums + 32*subTokens + 63) &^ 63
)

// subActivationBytes is the size of the activation pack of n tokens of nb
// super-blocks.
func subActivationBytes(n, nb int) int { return (n + subTokens - 1) / subTokens * nb * subActBytes }

// packSubActivations writes Q8_K rows [j0, j1) of the n rows of nb
// super-blocks in xq into the pack of all n rows; j0 is a multiple of
// subTokens, so ranges split at such multiples write disjoint bytes. sum32
// makes the block sums those of 32 values (Q4_K's sub-blocks).
func packSubActivations(pack, xq []byte, j0, j1, n, nb int, sum32 bool) {
	rowBytes := nb * q8kBytes
	if blocks := (n + subTokens - 1) / subTokens; n%subTokens != 0 && j1 == n {
		clear(pack[(blocks-1)*nb*subActBytes : blocks*nb*subActBytes])
	}
	for t := j0; t < j1; t++ {
		b, tt := t/subTokens, t%subTokens
		row := xq[t*rowBytes : (t+1)*rowBytes]
		for sb := 0; sb < nb; sb++ {
			blk := row[sb*q8kBytes : (sb+1)*q8kBytes]
			dst := pack[(b*nb+sb)*subActBytes : (b*nb+sb+1)*subActBytes]
			for c := 0; c < 4; c++ {
				copy(dst[c*subTokens*64+tt*64:][:64], blk[4+64*c:])
			}
			copy(dst[saD+4*tt:][:4], blk[0:4])
			bs := dst[saBsums+32*tt:][:32]
			if !sum32 {
				copy(bs, blk[260:292])
				continue
			}
			for g := 0; g < 8; g++ {
				s := int16(binary.LittleEndian.Uint16(blk[260+4*g:])) + int16(binary.LittleEndian.Uint16(blk[262+4*g:]))
				binary.LittleEndian.PutUint16(bs[2*g:], uint16(s))
			}
		}
	}
}

func putQuad(panel []byte, r, k int, q byte) { panel[sQuants+(k/4)*64+r*4+k%4] = q }

func putInt32(b []byte, v int32) { binary.LittleEndian.PutUint32(b, uint32(v)) }

// subPackQ4KGo writes the panel of rows (≤ 16) Q4_K rows, super-blocks sb0
// to sb0+nsb of rows of nb super-blocks (the reference for the assembly
// packer; rows past rows are zero).
func subPackQ4KGo(panel, w []byte, rows, nb, sb0, nsb int) {
	subPackK4Go(panel, w, rows, nb, sb0, nsb, q4kBytes, func(blk []byte, c, j int) (byte, byte) {
		b := blk[16+32*c+j]
		return b & 15, b >> 4
	})
}

// subPackQ5KGo is subPackQ4KGo for Q5_K rows: the same header and panel,
// each quant joined with its fifth bit from qh (0..31).
func subPackQ5KGo(panel, w []byte, rows, nb, sb0, nsb int) {
	subPackK4Go(panel, w, rows, nb, sb0, nsb, q5kBytes, func(blk []byte, c, j int) (byte, byte) {
		b, h := blk[48+32*c+j], blk[16+j]
		return b&15 | (h>>(2*c)&1)<<4, b>>4 | (h>>(2*c+1)&1)<<4
	})
}

// subPackK4Go is the panel writer of the types with Q4_K's header (d,
// dmin, 6-bit scales and mins): quants(blk, c, j) gives the low-nibble
// quant of chunk c at j (k = 64c+j) and the high one (k = 64c+32+j).
func subPackK4Go(panel, w []byte, rows, nb, sb0, nsb, blkBytes int, quants func(blk []byte, c, j int) (byte, byte)) {
	clear(panel[:nsb*subQ4Bytes])
	eachSuperBlock(panel, w, rows, nb, sb0, nsb, blkBytes, subQ4Bytes, func(r int, blk, p []byte) {
		subK4Header(p, r, blk)
		for c := 0; c < 4; c++ {
			for j := 0; j < 32; j++ {
				lo, hi := quants(blk, c, j)
				putQuad(p, r, 64*c+j, lo)
				putQuad(p, r, 64*c+32+j, hi)
			}
		}
	})
}

// subK4Header writes row r's d, dmin, scales and min pairs of the Q4_K or
// Q5_K block blk into the super-block panel p.
func subK4Header(p []byte, r int, blk []byte) {
	putFloat(p[sQ4D+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk)))
	putFloat(p[sQ4Dmin+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk[2:])))
	scales := blk[4:16]
	for j := 0; j < 8; j++ {
		sc, m := quant.ScaleMinK4(j, scales)
		putInt32(p[sScales+64*j+4*r:], int32(sc))
		binary.LittleEndian.PutUint16(p[sQ4Coef+64*(j/2)+4*r+2*(j%2):], uint16(m))
	}
}

// subQ6Header writes row r's d, scales and block-sum coefficients of the
// Q6_K block blk into the super-block panel p.
func subQ6Header(p []byte, r int, blk []byte) {
	putFloat(p[sQ6D+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk[208:])))
	sc := blk[192:208]
	for j := 0; j < 16; j++ {
		putInt32(p[sScales+64*j+4*r:], int32(int8(sc[j])))
		binary.LittleEndian.PutUint16(p[sQ6Coef+64*(j/2)+4*r+2*(j%2):], uint16(-32*int16(int8(sc[j]))))
	}
}

// subPackK4Fast and subPackQ6KFast are subPackQ4KGo/subPackQ5KGo and
// subPackQ6KGo a dword at a time (four quants of one row, nibbles and high
// bits moved by 32-bit masks and shifts): the packers of avx2-sub, whose
// CPUs have no 512-bit gathers; the same bytes (TestSubPackFast). qh
// (Q5_K) joins each quant's fifth bit; all nb super-blocks of rows rows.
func subPackK4Fast(panel, w []byte, rows, nb, blkBytes int, qh bool) {
	if rows < tileRows {
		clear(panel[:nb*subQ4Bytes])
	}
	qs := 16
	if qh {
		qs = 48
	}
	for r := 0; r < rows; r++ {
		for sb := 0; sb < nb; sb++ {
			blk, p := w[(r*nb+sb)*blkBytes:][:blkBytes], panel[sb*subQ4Bytes:][:subQ4Bytes]
			subK4Header(p, r, blk)
			for c := 0; c < 4; c++ {
				for j := 0; j < 8; j++ {
					v := binary.LittleEndian.Uint32(blk[qs+32*c+4*j:])
					lo, hi := v&0x0f0f0f0f, v>>4&0x0f0f0f0f
					if qh {
						h := binary.LittleEndian.Uint32(blk[16+4*j:])
						lo |= (h >> (2 * c) & 0x01010101) << 4
						hi |= (h >> (2*c + 1) & 0x01010101) << 4
					}
					binary.LittleEndian.PutUint32(p[sQuants+(16*c+j)*64+4*r:], lo)
					binary.LittleEndian.PutUint32(p[sQuants+(16*c+8+j)*64+4*r:], hi)
				}
			}
		}
	}
}

func subPackQ6KFast(panel, w []byte, rows, nb int) {
	if rows < tileRows {
		clear(panel[:nb*subQ6Bytes])
	}
	for r := 0; r < rows; r++ {
		for sb := 0; sb < nb; sb++ {
			blk, p := w[(r*nb+sb)*q6kBytes:][:q6kBytes], panel[sb*subQ6Bytes:][:subQ6Bytes]
			subQ6Header(p, r, blk)
			for half := 0; half < 2; half++ {
				for j := 0; j < 8; j++ { // l = 4j..4j+3
					a := binary.LittleEndian.Uint32(blk[64*half+4*j:])
					b := binary.LittleEndian.Uint32(blk[64*half+32+4*j:])
					h := binary.LittleEndian.Uint32(blk[128+32*half+4*j:])
					for quarter, v := range [4]uint32{
						a&0x0f0f0f0f | (h&0x03030303)<<4,
						b&0x0f0f0f0f | (h>>2&0x03030303)<<4,
						a>>4&0x0f0f0f0f | (h>>4&0x03030303)<<4,
						b>>4&0x0f0f0f0f | (h>>6&0x03030303)<<4,
					} {
						binary.LittleEndian.PutUint32(p[sQuants+(32*half+8*quarter+j)*64+4*r:], v)
					}
				}
			}
		}
	}
}

// subPackQ6KGo is subPackQ4KGo for Q6_K rows.
func subPackQ6KGo(panel, w []byte, rows, nb, sb0, nsb int) {
	clear(panel[:nsb*subQ6Bytes])
	eachSuperBlock(panel, w, rows, nb, sb0, nsb, q6kBytes, subQ6Bytes, func(r int, blk, p []byte) {
		subQ6Header(p, r, blk)
		ql, qh := blk[0:128], blk[128:192]
		for half := 0; half < 2; half++ {
			l0, h0 := ql[64*half:], qh[32*half:]
			for l := 0; l < 32; l++ {
				for quarter, qv := range q6kQuants(l0, h0, l) {
					putQuad(p, r, 128*half+32*quarter+l, qv)
				}
			}
		}
	})
}

// subPackQ4KR16Go writes the panels of nb super-blocks of one 16-row group
// of the interleaved Q4_K layout (g, variants/avx512's q4kr16.go): the
// header's halves widened, and each line's low and high nibbles, which are
// k-quads 8s+i and 8s+4+i of sub-block s, line i, as they stand (16 rows ×
// 4 bytes). The bytes subPackQ4KGo writes from the group's stored rows
// (TestSubPackR16Go).
func subPackQ4KR16Go(panel, g []byte, nb int) {
	const group, lo = 2368, 0x0F0F0F0F0F0F0F0F
	for b := range nb {
		src, p := g[b*group:][:group], panel[b*subQ4Bytes:][:subQ4Bytes]
		for r := range 16 {
			putFloat(p[sQ4D+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(src[2*r:])))
			putFloat(p[sQ4Dmin+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(src[32+2*r:])))
			for s := range 8 {
				putInt32(p[sScales+64*s+4*r:], int32(src[64+16*s+r]))
			}
			for pair := range 4 {
				binary.LittleEndian.PutUint16(p[sQ4Coef+64*pair+4*r:], uint16(src[192+32*pair+2*r]))
				binary.LittleEndian.PutUint16(p[sQ4Coef+64*pair+4*r+2:], uint16(src[192+32*pair+2*r+1]))
			}
		}
		for s := range 8 {
			for i := range 4 {
				line := src[320+(4*s+i)*64:][:64]
				low, high := p[sQuants+(8*s+i)*64:][:64], p[sQuants+(8*s+4+i)*64:][:64]
				for o := 0; o < 64; o += 8 {
					v := binary.LittleEndian.Uint64(line[o:])
					binary.LittleEndian.PutUint64(low[o:], v&lo)
					binary.LittleEndian.PutUint64(high[o:], v>>4&lo)
				}
			}
		}
	}
}

// subPackQ6KR16Go is subPackQ4KR16Go for the interleaved Q6_K layout
// (q6kr16.go): sub-block s's k-quads 4s…4s+3 are its two nibble lines'
// low and high nibbles joined with their top bits (bits 2g of the third
// line), as the r16 decode kernels build them.
func subPackQ6KR16Go(panel, g []byte, nb int) {
	const group, lo, top = 3360, 0x0F0F0F0F0F0F0F0F, 0x3030303030303030
	for b := range nb {
		src, p := g[b*group:][:group], panel[b*subQ6Bytes:][:subQ6Bytes]
		for r := range 16 {
			putFloat(p[sQ6D+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(src[2*r:])))
			for s := range 16 {
				sc := int32(int8(src[32+16*s+r]))
				putInt32(p[sScales+64*s+4*r:], sc)
				binary.LittleEndian.PutUint16(p[sQ6Coef+64*(s/2)+4*r+2*(s%2):], uint16(int16(-32*sc)))
			}
		}
		for s := range 16 {
			sub := src[288+192*s:][:192]
			for o := 0; o < 64; o += 8 {
				l0, l1, h := binary.LittleEndian.Uint64(sub[o:]), binary.LittleEndian.Uint64(sub[64+o:]), binary.LittleEndian.Uint64(sub[128+o:])
				for i, q := range [4]uint64{l0&lo | h<<4&top, l0>>4&lo | h<<2&top, l1&lo | h&top, l1>>4&lo | h>>2&top} {
					binary.LittleEndian.PutUint64(p[sQuants+(4*s+i)*64+o:], q)
				}
			}
		}
	}
}
