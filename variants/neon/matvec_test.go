//go:build arm64 && !noasm

package neon

import (
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/damascus-llm/damascus/model/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

func needDotProd(t testing.TB) {
	t.Helper()
	if !cpu.ARM64.HasASIMDDP {
		t.Skip("CPU lacks asimddp (SDOT)")
	}
}

var matVecCases = []struct {
	wt quant.Type
	f  kerneltest.MatVecFunc
}{
	{quant.Q4_K, MatVecQ4K},
	{quant.Q6_K, MatVecQ6K},
	{quant.Q8_0, MatVecQ8_0},
}

func TestMatVec(t *testing.T) {
	for _, c := range matVecCases {
		t.Run(c.wt.String(), func(t *testing.T) {
			needDotProd(t)
			kerneltest.MatVec(t, c.wt, c.f)
		})
	}
}

func BenchmarkMatVec(b *testing.B) {
	for _, c := range matVecCases {
		for _, s := range kerneltest.Shapes {
			b.Run("type="+kerneltest.TypeName(c.wt)+"/variant=neon/shape="+s.String(), func(b *testing.B) {
				needDotProd(b)
				kerneltest.BenchMatVec(b, c.wt, c.f, s)
			})
		}
	}
}
