package avx512

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/par"
)

// Q4_0 rows interleaved 16 to a 64-byte line, for the decode kernels
// (variants/avx2's r16blocks_amd64.s, this package's q40r16_amd64.s) and
// the GEMMs' panels (here beside the K-quant r16 layouts, which
// variants/avx2 imports too): the one-row AVX2 Q4_0 dot
// spends ≈ 20 instructions a 32-value block (a 1B Q4_0 decoded at 0.52×
// llama.cpp's AVX2 build on the Zen 5 VM with AVX-512 hidden); over 16
// rows a line the block's widening, offset and float step are paid once
// for 8 rows. Layout of 16 rows × one block (Q40R16Bytes, the 18 bytes a
// row of Q4_0; a matrix is its groups of 16 rows one after another, each
// group's blocks in order):
//
//	 0  d[16]       f16, row r at 2r
//	32  qs[4][64]   line j: bytes 4r…4r+3 are row r's quant bytes 4j…4j+3
//	                (values 4j+i in the low nibbles, 16+4j+i in the high)
const (
	Q40R16Rows  = 16
	Q40R16Bytes = 32 + 4*64 // 288
	// Q40R16ActBytes is one block of activations as the kernel reads
	// them: the 32 quants, 8·Σx as int32, d as float32.
	Q40R16ActBytes = 40

	q80Block = 34 // a Q8_0 block
	q40Block = 18 // a Q4_0 block
)

// RepackQ40R16 lays out rows Q4_0 rows of k values (src, as stored) in the
// interleaved layout (dst, ⌈rows/16⌉ × k/32 × Q40R16Bytes; the last group
// padded with zero rows, whose d = 0 makes their products 0).
func RepackQ40R16(dst, src []byte, rows, k int) error {
	return repackBlocks("q4_0-r16", dst, src, rows, k, q40Block, Q40R16Bytes)
}

// repackBlocks lays out rows rows of k values of a 32-value block type
// (bs bytes a block: an f16 d, then the quant bytes) in its interleaved
// layout of groupBytes a group and block: the 16 rows' d, then line j
// holding each row's quant bytes 4j…4j+3.
func repackBlocks(name string, dst, src []byte, rows, k, bs, groupBytes int) error {
	nb, groups := k/32, (rows+Q40R16Rows-1)/Q40R16Rows
	if k%32 != 0 || len(src) < rows*nb*bs || len(dst) < groups*nb*groupBytes {
		return fmt.Errorf("%s: %d rows of %d values (src %d bytes, dst %d): k must be a multiple of 32, dst %d bytes", name, rows, k, len(src), len(dst), groups*nb*groupBytes)
	}
	// The groups are shared among GOMAXPROCS goroutines: a model's load
	// repacks hundreds of megabytes (one goroutine took 1.5 s of a 1B's).
	par.Ranges(groups, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			for b := range nb {
				out := dst[(g*nb+b)*groupBytes:][:groupBytes]
				clear(out)
				for r := range min(Q40R16Rows, rows-g*Q40R16Rows) {
					blk := src[((g*Q40R16Rows+r)*nb+b)*bs:][:bs]
					copy(out[2*r:], blk[:2])
					for j := range (bs - 2) / 4 {
						copy(out[32+64*j+4*r:][:4], blk[2+4*j:])
					}
				}
			}
		}
	})
	return nil
}

// PrepareQ40R16 lays out Q8_0 activations (xq, k values) for the kernel:
// each block's quants, 8 × their sum (Q4_0's offset), d widened.
func PrepareQ40R16(dst, xq []byte, k int) {
	for b := range k / 32 {
		in, out := xq[b*q80Block:][:q80Block], dst[b*Q40R16ActBytes:][:Q40R16ActBytes]
		sum := int32(0)
		for _, q := range in[2:] {
			sum += int32(int8(q))
		}
		copy(out[:32], in[2:])
		binary.LittleEndian.PutUint32(out[32:], uint32(8*sum))
		binary.LittleEndian.PutUint32(out[36:], math.Float32bits(quant.FP16ToFloat32(binary.LittleEndian.Uint16(in))))
	}
}

// DequantizeRowQ40R16 expands row r of a matrix of k columns in the
// layout (w) into dst, as quant.Dequantize expands the stored row.
func DequantizeRowQ40R16(dst []float32, w []byte, r, k int) {
	nb, rr := k/32, r%Q40R16Rows
	for b := range nb {
		g := w[((r/Q40R16Rows)*nb+b)*Q40R16Bytes:][:Q40R16Bytes]
		d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[2*rr:]))
		y := dst[32*b:][:32]
		for j := range 4 {
			for i, v := range g[32+64*j+4*rr:][:4] {
				y[4*j+i] = d * float32(int(v&15)-8)
				y[16+4*j+i] = d * float32(int(v>>4)-8)
			}
		}
	}
}

// Q8_0 rows interleaved the same way (q8_0-r16): 16 rows × one block in
// Q80R16Bytes (the stored 34 a row), d[16] then eight lines, line j
// holding each row's quants 4j…4j+3; activations as Q4_0's (the sum
// unused).
const Q80R16Bytes = 32 + 8*64 // 544

// RepackQ80R16 lays out rows Q8_0 rows of k values in the interleaved
// layout (the last group padded with zero rows).
func RepackQ80R16(dst, src []byte, rows, k int) error {
	return repackBlocks("q8_0-r16", dst, src, rows, k, q80Block, Q80R16Bytes)
}

// DequantizeRowQ80R16 expands row r of a matrix of k columns in the
// layout (w) into dst, as quant.Dequantize expands the stored row.
func DequantizeRowQ80R16(dst []float32, w []byte, r, k int) {
	nb, rr := k/32, r%Q40R16Rows
	for b := range nb {
		g := w[((r/Q40R16Rows)*nb+b)*Q80R16Bytes:][:Q80R16Bytes]
		d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[2*rr:]))
		for j := range 8 {
			for i, v := range g[32+64*j+4*rr:][:4] {
				dst[32*b+4*j+i] = d * float32(int8(v))
			}
		}
	}
}

// Q80R16Layout is the Q8_0 layout as the kernel contract names it.
var Q80R16Layout = &ledger.WeightLayout{Name: "q8_0-r16", Weights: quant.Q8_0, Rows: Q40R16Rows,
	GroupBytes: func(k int) int { return k / 32 * Q80R16Bytes }, Repack: RepackQ80R16,
	ActBytes: func(k int) int { return k / 32 * Q40R16ActBytes }, Prepare: PrepareQ40R16, DequantizeRow: DequantizeRowQ80R16}

// Q40R16Layout is the layout as the kernel contract names it.
var Q40R16Layout = &ledger.WeightLayout{Name: "q4_0-r16", Weights: quant.Q4_0, Rows: Q40R16Rows,
	GroupBytes: func(k int) int { return k / 32 * Q40R16Bytes }, Repack: RepackQ40R16,
	ActBytes: func(k int) int { return k / 32 * Q40R16ActBytes }, Prepare: PrepareQ40R16, DequantizeRow: DequantizeRowQ40R16}
