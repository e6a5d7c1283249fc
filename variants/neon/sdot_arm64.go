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
	for _, v := range []struct {
		wt    quant.Type
		impl  ledger.MatVec
		notes string
	}{
		{quant.Q4_K, MatVecQ4K, "one row, one super-block at a time: SDOT (WORD-encoded) per sub-block, ADDV, integer MADD by scales; scalar mins term"},
		{quant.Q6_K, MatVecQ6K, "one row, one super-block at a time: SDOT (WORD-encoded) per 16-value sub-block, ADDV, integer MADD by scales; -32 offset from bsums"},
		{quant.Q8_0, MatVecQ8_0, "one row, one block at a time: two SDOT (WORD-encoded), ADDV, scalar float accumulate"},
	} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(v.wt), Name: "neon-dotprod", Family: ledger.FamilyNEON,
			Features: []string{"asimd", "asimddp"}, Impl: v.impl, Notes: v.notes})
	}
}
