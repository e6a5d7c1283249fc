package avx512

import (
	"encoding/binary"
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/par"
)

// For issues 19 and 20, ledger variants over a weight layout built at load
// (ledger.WeightLayout; registered in q4kr16_amd64.go): Q4_K rows
// interleaved 16 to a vector,
// so a decode kernel spends ≈ 6.6 instructions a 64-byte line instead of
// ≈ 20 and needs no horizontal sums. harness/roofline's BenchmarkReadMix
// streams it beside plain loads and the shipped kernels.
//
// Layout of 16 rows × one super-block (Q4KR16Bytes bytes; a matrix is its
// groups of 16 rows one after another, each group's super-blocks in order):
//
//	  0  d[16]      f16, row r at 2r
//	 32  dmin[16]   f16
//	 64  sc[8][16]  the 6-bit sub-block scales as bytes, sub-block s row r at 16s+r
//	192  m[4][16][2] the mins in pairs: pair p row r at 32p+2r (m[2p], m[2p+1])
//	320  qs[8][4][64] sub-block s, group g: byte 4r+i holds row r's weight
//	                  32s+4g+i in its low nibble and 32s+16+4g+i in its high
const (
	Q4KR16Rows  = 16
	Q4KR16Bytes = 320 + 8*4*64 // 2368: 148 bytes a row and super-block (Q4_K: 144)
)

// RepackQ4KR16 lays out rows Q4_K rows of k values (src, as stored) in the
// interleaved layout (dst, ⌈rows/16⌉ × k/256 × Q4KR16Bytes bytes; the last
// group padded).
func RepackQ4KR16(dst, src []byte, rows, k int) error {
	return repackR16("q4k-r16", dst, src, rows, k, 144, Q4KR16Bytes, func(out []byte, r int, blk []byte) {
		copy(out[2*r:], blk[0:2])
		copy(out[32+2*r:], blk[2:4])
		for s := range 8 {
			sc, m := quant.ScaleMinK4(s, blk[4:16])
			out[64+16*s+r] = sc
			out[192+32*(s/2)+2*r+s%2] = m
		}
		q4kR16Quants(out[320:], r, blk[16:144])
	})
}

// q4kR16Quants writes row r's quants qs (128 bytes) into a group's 32
// lines: line s·4+g holds, 4 bytes a row, sub-block s's values 4g…4g+3 in
// its low nibbles and 4g+16…4g+19 in its high ones. Sub-block s is the low
// (s even) or high (s odd) nibbles of qs[32·(s/2):], so two lines' words
// are two 8-byte words of qs masked and shifted (byte by byte, as
// q4kR16QuantsBytes in the tests, a 3B's load spent ≈ 3 s of thread time).
func q4kR16Quants(lines []byte, r int, qs []byte) {
	const lo = 0x0F0F0F0F0F0F0F0F
	lines = lines[:32*64]
	for n := range 4 {
		q := qs[32*n : 32*n+32]
		for h := range 2 { // words g = 2h and 2h+1 of sub-blocks 2n and 2n+1
			a, b := binary.LittleEndian.Uint64(q[8*h:]), binary.LittleEndian.Uint64(q[8*h+16:])
			even, odd := a&lo|(b&lo)<<4, (a>>4)&lo|b&^lo
			at := (8*n+2*h)*64 + 4*r // line (2n)·4 + 2h
			binary.LittleEndian.PutUint32(lines[at:], uint32(even))
			binary.LittleEndian.PutUint32(lines[at+64:], uint32(even>>32))
			binary.LittleEndian.PutUint32(lines[at+256:], uint32(odd)) // four lines on: sub-block 2n+1
			binary.LittleEndian.PutUint32(lines[at+320:], uint32(odd>>32))
		}
	}
}

// repackR16 checks the shapes, then calls row for each row r of each group
// of 16 and super-block: its stored block blk (bs bytes) into the group's
// interleaved block out (groupBytes, zeroed first). A last group of fewer
// than 16 rows is padded with zero rows (d = 0: their products are 0).
// The groups are shared among GOMAXPROCS goroutines: a model's load
// repacks gigabytes.
func repackR16(name string, dst, src []byte, rows, k, bs, groupBytes int, row func(out []byte, r int, blk []byte)) error {
	nb := k / quant.QK_K
	groups := (rows + Q4KR16Rows - 1) / Q4KR16Rows
	if k%quant.QK_K != 0 || len(src) < rows*nb*bs || len(dst) < groups*nb*groupBytes {
		return fmt.Errorf("%s: %d rows of %d values (src %d bytes, dst %d): k must be a multiple of 256, dst %d bytes", name, rows, k, len(src), len(dst), groups*nb*groupBytes)
	}
	par.Ranges(groups, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			for b := range nb {
				out := dst[(g*nb+b)*groupBytes:][:groupBytes]
				clear(out)
				for r := range min(Q4KR16Rows, rows-g*Q4KR16Rows) {
					row(out, r, src[((g*Q4KR16Rows+r)*nb+b)*bs:][:bs])
				}
			}
		}
	})
	return nil
}

// Q4KR16Layout and Q6KR16Layout are the interleaved layouts as the kernel
// contract names them (ledger.WeightLayout): the weight-layout seam that
// lets a decode kernel read weights repacked at load.
var (
	Q4KR16Layout = &ledger.WeightLayout{Name: "q4_k-r16", Weights: quant.Q4_K, Rows: Q4KR16Rows,
		GroupBytes: func(k int) int { return k / quant.QK_K * Q4KR16Bytes }, Repack: RepackQ4KR16,
		ActBytes: func(k int) int { return k / quant.QK_K * Q4KR16ActBytes }, Prepare: PrepareQ4KR16, DequantizeRow: DequantizeRowQ4KR16}
	Q6KR16Layout = &ledger.WeightLayout{Name: "q6_k-r16", Weights: quant.Q6_K, Rows: Q4KR16Rows,
		GroupBytes: func(k int) int { return k / quant.QK_K * Q6KR16Bytes }, Repack: RepackQ6KR16,
		ActBytes: func(k int) int { return k / quant.QK_K * Q6KR16ActBytes }, Prepare: PrepareQ6KR16, DequantizeRow: DequantizeRowQ6KR16}
)

// R16MatVec is r16MatVec for the interleaved kernels of other packages
// (variants/avx2's).
func R16MatVec(l *ledger.WeightLayout, dot func(dst []float32, w, xr []byte, k, dist int), dist int) ledger.MatVec {
	return r16MatVec(l, dot, dist)
}

// r16MatVec is an interleaved kernel (whole groups of 16 rows, prefetching
// dist bytes ahead) as a ledger matvec over layout l: a last group of fewer
// rows goes through a 16-value buffer.
func r16MatVec(l *ledger.WeightLayout, dot func(dst []float32, w, xr []byte, k, dist int), dist int) ledger.MatVec {
	return func(dst []float32, w, xr []byte, k int) {
		full := len(dst) &^ (Q4KR16Rows - 1)
		if full > 0 {
			dot(dst[:full], w, xr, k, dist)
		}
		if full < len(dst) {
			var tail [Q4KR16Rows]float32
			dot(tail[:], w[l.Offset(full, k):], xr, k, dist)
			copy(dst[full:], tail[:])
		}
	}
}

// Q4KR16ActBytes is the activations of one super-block as q4kr16Dot reads
// them: the 256 quants, the sub-blocks' sums as int16 pairs (s = 2p, 2p+1
// in dword p), d.
const Q4KR16ActBytes = 256 + 16 + 16

// PrepareQ4KR16 lays out Q8_K activations (xq, k values) for Q4KR16MatVec.
func PrepareQ4KR16(dst, xq []byte, k int) {
	prepareR16(dst, xq, k, Q4KR16ActBytes, 272, func(out, bsums []byte) {
		for s := range 8 {
			sum := int16(binary.LittleEndian.Uint16(bsums[4*s:])) + int16(binary.LittleEndian.Uint16(bsums[4*s+2:]))
			binary.LittleEndian.PutUint16(out[2*s:], uint16(sum))
		}
	})
}

// prepareR16 lays out each Q8_K super-block of xq (k values) in actBytes
// of dst: its 256 quants, what sums makes of its 16 bsums after them, its
// d at dOff, zeros after it.
func prepareR16(dst, xq []byte, k, actBytes, dOff int, sums func(out, bsums []byte)) {
	const q8 = 292
	for b := range k / quant.QK_K {
		in, out := xq[b*q8:][:q8], dst[b*actBytes:][:actBytes]
		copy(out[:256], in[4:260])
		sums(out[256:], in[260:292])
		copy(out[dOff:dOff+4], in[0:4])
		clear(out[dOff+4:]) // padding: a reused buffer keeps no stale bytes
	}
}

// Q4KR16MatVec computes dst[r] = W[r]·x for the rows of w (interleaved,
// len(dst) a multiple of 16 rows) against x laid out by PrepareQ4KR16,
// prefetching the weights dist bytes ahead (0: no software prefetch).
func Q4KR16MatVec(dst []float32, w, xr []byte, k, dist int) {
	if len(dst) == 0 {
		return
	}
	if dist > 0 {
		q4kr16DotPf(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/Q4KR16Rows, dist)
		return
	}
	q4kr16Dot(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/Q4KR16Rows)
}

// DequantizeRowQ4KR16 expands row r of a matrix of k columns in the
// interleaved Q4_K layout (w) into dst (k values), as quant.Dequantize
// expands the stored row: (d·sc)·q − dmin·m a sub-block.
func DequantizeRowQ4KR16(dst []float32, w []byte, r, k int) {
	nb, rr := k/quant.QK_K, r%Q4KR16Rows
	for b := range nb {
		g := w[((r/Q4KR16Rows)*nb+b)*Q4KR16Bytes:][:Q4KR16Bytes]
		d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[2*rr:]))
		dmin := quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[32+2*rr:]))
		y := dst[b*quant.QK_K:][:quant.QK_K]
		for s := range 8 {
			ds := d * float32(g[64+16*s+rr])
			ms := dmin * float32(g[192+32*(s/2)+2*rr+s%2])
			for q := range 4 {
				line := g[320+(s*4+q)*64+4*rr:][:4]
				for i, v := range line {
					y[32*s+4*q+i] = ds*float32(v&15) - ms
					y[32*s+16+4*q+i] = ds*float32(v>>4) - ms
				}
			}
		}
	}
}
