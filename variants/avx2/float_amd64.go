//go:build !noasm

package avx2

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func f32RowsAVX2(dst *float32, rows int, w, xq *byte, k int)

//go:noescape
func f16RowsAVX2(dst *float32, rows int, w, xq *byte, k int)

// Float matrix-vector products: F32 with FMA, F16 widened by VCVTPH2PS.
var (
	MatVecF32 = rowops.FloatMatVec(f32RowsAVX2)
	MatVecF16 = rowops.FloatMatVec(f16RowsAVX2)
)

func init() {
	features := []string{"avx2", "fma", "f16c"}
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.F32), Name: "avx2", Family: ledger.FamilyAVX2,
		Features: features, Impl: MatVecF32, Notes: "four 8-lane FMA accumulators, 8-wide then scalar tail"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.F16), Name: "avx2", Family: ledger.FamilyAVX2,
		Features: features, Impl: MatVecF16, Notes: "VCVTPH2PS both operands, FMA in float32"})
}
