//go:build !noasm

package avx2

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func f32RowsAVX2(dst *float32, rows int, w, xq *byte, k int)

//go:noescape
func f16RowsAVX2(dst *float32, rows int, w, xq *byte, k int)

// floatMatVec adapts a rows kernel over k plain values to ledger.MatVec.
func floatMatVec(kernel rowsKernel) ledger.MatVec {
	return func(dst []float32, w, xq []byte, k int) {
		if len(dst) == 0 {
			return
		}
		if k == 0 {
			clear(dst)
			return
		}
		kernel(&dst[0], len(dst), &w[0], &xq[0], k)
	}
}

// Float matrix-vector products: F32 with FMA, F16 widened by VCVTPH2PS.
var (
	MatVecF32 = floatMatVec(f32RowsAVX2)
	MatVecF16 = floatMatVec(f16RowsAVX2)
)

func init() {
	features := []string{"avx2", "fma", "f16c"}
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.F32), Name: "avx2", Family: ledger.FamilyAVX2,
		Features: features, Impl: MatVecF32, Notes: "four 8-lane FMA accumulators, 8-wide then scalar tail"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.F16), Name: "avx2", Family: ledger.FamilyAVX2,
		Features: features, Impl: MatVecF16, Notes: "VCVTPH2PS both operands, FMA in float32"})
}
