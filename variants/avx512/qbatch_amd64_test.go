//go:build !noasm

package avx512

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
)

// TestBatchEqualsMatVec: the batched decode kernels give every token the
// bits of the one-row avx512-vnni matvec (and so of its prefetching forms,
// the same arithmetic): a Batch's rows then round exactly as a Context's
// decode, whatever the token count, group and weight rows. Adversarial
// and random blocks, every token count to 2·qbGroup+1, both forms.
func TestBatchEqualsMatVec(t *testing.T) {
	if !cpufeat.Has("avx512vnni") || !cpufeat.Has("avx512bw") {
		t.Skip("needs AVX512-VNNI and AVX512BW")
	}
	r := ledgertest.NewRand(5)
	for _, c := range []struct {
		f  qbFormat
		mv func(dst []float32, w, xq []byte, k int)
	}{{qbQ4K, MatVecQ4KVNNI}, {qbQ6K, MatVecQ6KVNNI}} {
		for _, k := range []int{256, 768, 3072} {
			for _, mode := range ledgertest.Modes {
				rows, nb := 19, k/256
				var w []byte
				if c.f.typ == quant.Q4_K {
					w = ledgertest.Q4K(r, rows*nb, mode)
				} else {
					w = ledgertest.Q6K(r, rows*nb, mode)
				}
				for n := 1; n <= 2*qbGroup+1; n++ {
					xq := ledgertest.Q8KTokens(r, n, nb)
					got := make([]float32, n*rows)
					c.f.matMul(0)(got, rows, w, rows, xq, n, k)
					p := c.f.prepared(1024)
					prep := make([]byte, p.Size(n, k))
					p.Prepare(prep, xq, 0, n, n, k)
					viaPrep := make([]float32, n*rows)
					p.Run(viaPrep, rows, w, rows, prep, n, k)
					ledgertest.SameAsMatVec(t, fmt.Sprintf("%s k=%d %s n=%d", c.f.typ, k, mode, n), rows, n, func(want []float32, j int) {
						c.mv(want, w, xq[j*nb*q8kBlock:(j+1)*nb*q8kBlock], k)
					}, got, viaPrep)
				}
			}
		}
		t.Logf("%s: every token bit for bit the matvec's", c.f.typ)
	}
}
