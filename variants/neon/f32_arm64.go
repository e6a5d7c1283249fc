//go:build !noasm

package neon

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func f32RowsNEON(dst *float32, rows int, w, xq *byte, k int)

// MatVecF32 computes dst[r] = W[r]·x for float32 weights and activations
// with FMLA.
func MatVecF32(dst []float32, w, xq []byte, k int) {
	rowops.Floats(f32RowsNEON, dst, w, xq, k)
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.F32), Name: "neon", Family: ledger.FamilyNEON,
		Features: []string{"asimd"}, Impl: ledger.MatVec(MatVecF32),
		Notes: "one row at a time: four FMLA accumulators over 16 values, scalar tail, WORD-encoded FADD/FADDP reduction"})
}
