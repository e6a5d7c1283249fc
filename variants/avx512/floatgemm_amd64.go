//go:build !noasm

package avx512

import (
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/freelist"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

// The F16 and BF16 GEMM (matmul/f16, matmul/bf16: avx512-gemm;
// floatgemm_amd64.s). Their prefill used to run the matvec over chunks of
// rows, every token widening every weight again and summing its own 16
// lanes: bound by the widening and the sums (1B F16 pp128 at 0.94×
// llama.cpp's zen4 build on the Zen 5 VM). Here a tile of 6 rows × 4
// tokens widens each of its 10 operands' 16 values once a step for 24
// FMAs, and sums lanes once a tile.
const (
	floatTileRows   = 6
	floatTileTokens = 4
	// floatKChunk is the values of k one pass over the tiles covers, so a
	// call's rows (the engine deals 64 at a time) stay in L2 for every
	// token block.
	floatKChunk = 2048
)

// floatTile is the tile kernel's arguments (offsets fixed in the assembly).
type floatTile struct {
	rows  [floatTileRows]*byte
	toks  [floatTileTokens]*byte
	out   *float32
	steps int // 16-value steps
}

//go:noescape
func f16Tile(a *floatTile)

//go:noescape
func bf16Tile(a *floatTile)

//go:noescape
func bf16TileDot(a *floatTile)

//go:noescape
func f16RowsX32(dst *float32, rows int, w *byte, x *float32, k int)

//go:noescape
func f16RowsX32N(dst *float32, rows int, w *byte, x *float32, k int)

// f16Widened is the scratch of matVecF16X32, kept between calls.
var f16Widened freelist.List[[]float32]

// matVecF16X32 is the F16 matvec with the activations widened to float32
// once a call instead of once a row (k a multiple of 64; others take the
// avx512 matvec), rows by kernel.
func matVecF16X32(kernel func(dst *float32, rows int, w *byte, x *float32, k int)) ledger.MatVec {
	return func(dst []float32, w, xq []byte, k int) { f16X32(kernel, dst, w, xq, k) }
}

func f16X32(kernel func(dst *float32, rows int, w *byte, x *float32, k int), dst []float32, w, xq []byte, k int) {
	if len(dst) == 0 {
		return
	}
	if k%64 != 0 || k == 0 {
		MatVecF16(dst, w, xq, k)
		return
	}
	if len(w) < len(dst)*2*k || len(xq) < 2*k {
		panic(fmt.Sprintf("avx512 f16 matvec: bad operands: rows=%d k=%d len(w)=%d len(xq)=%d", len(dst), k, len(w), len(xq)))
	}
	s := f16Widened.Get()
	defer f16Widened.Put(s)
	if cap(*s) < k {
		*s = make([]float32, k)
	}
	x := (*s)[:k]
	DequantizeF16(x, xq[:2*k])
	kernel(&dst[0], len(dst), &w[0], &x[0], k)
}

// floatGemm is the GEMM over 2-byte floats by tile, step values a tile
// step (k a multiple of step; others take the matvec, mv, a token at a
// time).
func floatGemm(tile func(*floatTile), step int, mv ledger.MatVec) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		if rows <= 0 || n <= 0 {
			return
		}
		if len(w) < rows*2*k || len(xq) < n*2*k || ldd < rows || len(dst) < (n-1)*ldd+rows {
			panic(fmt.Sprintf("avx512 float gemm: bad operands: rows=%d k=%d n=%d ldd=%d len(w)=%d len(xq)=%d len(dst)=%d",
				rows, k, n, ldd, len(w), len(xq), len(dst)))
		}
		if k%step != 0 || k == 0 {
			for j := range n {
				mv(dst[j*ldd:j*ldd+rows], w[:rows*2*k], xq[j*2*k:(j+1)*2*k], k)
			}
			return
		}
		var a floatTile
		var out [floatTileTokens * floatTileRows]float32
		a.out = &out[0]
		for k0 := 0; k0 < k; k0 += floatKChunk {
			kc := min(floatKChunk, k-k0)
			a.steps = kc / step
			for t0 := 0; t0 < n; t0 += floatTileTokens {
				nt := min(floatTileTokens, n-t0)
				for t := range floatTileTokens {
					a.toks[t] = &xq[(t0+min(t, nt-1))*2*k+2*k0]
				}
				for r0 := 0; r0 < rows; r0 += floatTileRows {
					nr := min(floatTileRows, rows-r0)
					for r := range floatTileRows {
						a.rows[r] = &w[(r0+min(r, nr-1))*2*k+2*k0]
					}
					tile(&a)
					for t := range nt {
						d := dst[(t0+t)*ldd+r0:][:nr]
						o := out[t*floatTileRows:][:nr]
						if k0 == 0 {
							copy(d, o)
						} else {
							for r := range d {
								d[r] += o[r]
							}
						}
					}
				}
			}
		}
	}
}

func init() {
	base := []string{"avx512f", "avx512bw", "avx512vl"}
	const how = "a tile of 6 weight rows × 4 tokens in 24 ZMM accumulators: each step widens the rows' and the tokens' 16 values once for 24 FMAs in float32, " +
		"the lanes summed once a tile; k in passes of 2048 values so a call's rows stay in L2 for every token block"
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.F16), Name: "avx512-gemm", Family: ledger.FamilyAVX512, Features: append(base, "f16c"),
		Impl: floatGemm(f16Tile, 16, rowops.FloatMatVec(f16RowsAVX512)), Notes: "F16 by VCVTPH2PS; " + how})
	const x32 = "the activations widened to float32 once a call (the avx512 matvec widens them again for every row, two VCVTPH2PS a weight vector): " +
		"per 64 values of a row 4 VCVTPH2PS of the weights, 4 FMAs with the float32 activations from memory, 4 accumulators. " +
		"Level with avx512 on Zen 5 (1B shapes, 2 threads, 5 runs: every form 38-50 GB/s, within a few percent of it shape by shape, run 20261206T010614Z-0c75fe): " +
		"the F16 decode is bound by the memory there, not by the widening"
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.F16), Name: "avx512-x32", Family: ledger.FamilyAVX512, Features: append(base, "f16c"),
		Impl: matVecF16X32(f16RowsX32), Notes: x32})
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.F16), Name: "avx512-x32-nta8k", Family: ledger.FamilyAVX512, Features: append(base, "f16c"),
		Impl: matVecF16X32(f16RowsX32N), Notes: x32 + "; every weight line prefetched 8 KiB ahead (PREFETCHNTA)"})
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.BF16), Name: "avx512-gemm", Family: ledger.FamilyAVX512, Features: base,
		Impl: floatGemm(bf16Tile, 16, rowops.FloatMatVec(bf16RowsAVX512)), Notes: "BF16 widened by VPMOVZXWD+VPSLLD; " + how +
			". A loser on Zen 5: the promoted avx512-bf16 matvec (VDPBF16PS, 32 products an instruction, no widening) over chunks of rows was faster, " +
			"pp16 0.89×, pp128 0.81×, pp512 0.92× (1B BF16, 8 rounds, run 20261206T005652Z-4c3dfc); a tile over VDPBF16PS is the next try"})
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.BF16), Name: "avx512-bf16-gemm", Family: ledger.FamilyAVX512, Features: append(base, "avx512bf16"),
		Impl: floatGemm(bf16TileDot, 32, MatVecBF16Dot),
		Notes: "the 6 × 4 tile by VDPBF16PS (BYTE-encoded): steps of 32 values, rows and tokens loaded as they stand, 24 VDPBF16PS a step " +
			"(no widening: 32 products an instruction); flushes bf16 denormals, as the avx512-bf16 matvec does; k in passes of 2048 values"})
}
