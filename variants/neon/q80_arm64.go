//go:build !noasm

package neon

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func q80RowsNEON(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ8_0 computes dst[r] = W[r]·x for Q8_0 weights and activations with
// SDOT.
func MatVecQ8_0(dst []float32, w, xq []byte, k int) {
	rowops.Blocks(q80RowsNEON, 32, dst, w, xq, k)
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q8_0), Name: "neon-dotprod", Family: ledger.FamilyNEON,
		Features: []string{"asimd", "asimddp"}, Impl: ledger.MatVec(MatVecQ8_0),
		Notes: "one row, one block at a time: two SDOT (WORD-encoded), ADDV, scalar float accumulate"})
}
