//go:build arm64 && !noasm

package neon

import (
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

func need(t testing.TB, dotProd bool) {
	t.Helper()
	if !cpufeat.Has("asimd") {
		t.Skip("machine lacks asimd")
	}
	if dotProd && !cpufeat.Has("asimddp") {
		t.Skip("machine lacks asimddp (SDOT)")
	}
}

var matVecCases = []struct {
	wt      quant.Type
	f       ledgertest.MatVecFunc
	dotProd bool // needs SDOT
}{
	{quant.F32, MatVecF32, false},
	{quant.Q4_K, MatVecQ4K, true},
	{quant.Q6_K, MatVecQ6K, true},
	{quant.Q8_0, MatVecQ8_0, true},
}

func TestMatVec(t *testing.T) {
	for _, c := range matVecCases {
		t.Run(c.wt.String(), func(t *testing.T) {
			need(t, c.dotProd)
			ledgertest.MatVec(t, c.wt, c.f)
		})
	}
}

func BenchmarkMatVec(b *testing.B) {
	for _, c := range matVecCases {
		for _, s := range ledgertest.Shapes {
			b.Run("type="+ledgertest.TypeName(c.wt)+"/variant=neon/shape="+s.String(), func(b *testing.B) {
				need(b, c.dotProd)
				ledgertest.BenchMatVec(b, c.wt, c.f, s)
			})
		}
	}
}
