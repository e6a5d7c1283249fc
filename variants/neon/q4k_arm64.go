//go:build !noasm

package neon

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func q4kRowsNEON(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ4K computes dst[r] = W[r]·x for Q4_K weights and Q8_K activations
// with SDOT.
func MatVecQ4K(dst []float32, w, xq []byte, k int) {
	rowops.Blocks(q4kRowsNEON, 256, dst, w, xq, k)
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_K), Name: "neon-dotprod", Family: ledger.FamilyNEON,
		Features: []string{"asimd", "asimddp"}, Impl: ledger.MatVec(MatVecQ4K),
		Notes: "one row, one super-block at a time: SDOT (WORD-encoded) per sub-block, ADDV, integer MADD by scales; scalar mins term"})
}
