package gounrolled

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
)

// TestBatchEqualsMatVec: the batched decode products give every token the
// bits of this package's one-row matvec, over adversarial and random
// blocks and token counts 1 to 9.
func TestBatchEqualsMatVec(t *testing.T) {
	r := ledgertest.NewRand(9)
	for _, c := range []struct {
		typ quant.Type
		mm  func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int)
		mv  func(dst []float32, w, xq []byte, k int)
	}{{quant.Q4_K, MatVecBatchQ4K, MatVecQ4K}, {quant.Q6_K, MatVecBatchQ6K, MatVecQ6K}} {
		for _, k := range []int{256, 1280} {
			for _, mode := range ledgertest.Modes {
				rows, nb := 7, k/256
				w := ledgertest.Q4K(r, rows*nb, mode)
				if c.typ == quant.Q6_K {
					w = ledgertest.Q6K(r, rows*nb, mode)
				}
				for n := 1; n <= 9; n++ {
					xq := ledgertest.Q8KTokens(r, n, nb)
					got := make([]float32, n*rows)
					c.mm(got, rows, w, rows, xq, n, k)
					ledgertest.SameAsMatVec(t, fmt.Sprintf("%s k=%d %s n=%d", c.typ, k, mode, n), rows, n, func(want []float32, j int) {
						c.mv(want, w, xq[j*nb*q8KBytes:(j+1)*nb*q8KBytes], k)
					}, got)
				}
			}
		}
	}
}
