//go:build !noasm

package neon

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The SDOT matvecs (q4k, q6k, q80) are one variant each with the same name,
// family and features; they register here from one table so that only the
// notes differ.
func init() {
	ledger.RegisterMatVecs("neon-dotprod", ledger.FamilyNEON, []string{"asimd", "asimddp"},
		ledger.MatVecImpl{Weights: quant.Q4_K, Impl: MatVecQ4K, Notes: "one row, one super-block at a time: SDOT (WORD-encoded) per sub-block, ADDV, integer MADD by scales; scalar mins term"},
		ledger.MatVecImpl{Weights: quant.Q6_K, Impl: MatVecQ6K, Notes: "one row, one super-block at a time: SDOT (WORD-encoded) per 16-value sub-block, ADDV, integer MADD by scales; -32 offset from bsums"},
		ledger.MatVecImpl{Weights: quant.Q8_0, Impl: MatVecQ8_0, Notes: "one row, one block at a time: two SDOT (WORD-encoded), ADDV, scalar float accumulate"})
}
