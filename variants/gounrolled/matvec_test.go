package gounrolled_test

import (
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp/ggmltest"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

func TestMatVec(t *testing.T) {
	for _, c := range []struct {
		wt quant.Type
		f  kerneltest.MatVecFunc
	}{
		{quant.Q4_K, gounrolled.MatVecQ4K},
		{quant.Q6_K, gounrolled.MatVecQ6K},
		{quant.Q8_0, gounrolled.MatVecQ8_0},
		{quant.F32, gounrolled.MatVecF32},
		{quant.F16, gounrolled.MatVecF16},
		{quant.BF16, gounrolled.MatVecBF16},
	} {
		t.Run(c.wt.String(), func(t *testing.T) { kerneltest.MatVec(t, c.wt, c.f) })
	}
}

func BenchmarkMatVec(b *testing.B) {
	for _, c := range []struct {
		name string
		wt   quant.Type
		f    kerneltest.MatVecFunc
	}{
		{"go-unrolled", quant.Q4_K, gounrolled.MatVecQ4K},
		{"go-unrolled", quant.Q6_K, gounrolled.MatVecQ6K},
		{"go-unrolled", quant.Q8_0, gounrolled.MatVecQ8_0},
		{"go-unrolled", quant.F32, gounrolled.MatVecF32},
		{"go-unrolled", quant.F16, gounrolled.MatVecF16},
		{"go-unrolled", quant.BF16, gounrolled.MatVecBF16},
	} {
		for _, s := range kerneltest.Shapes {
			b.Run("type="+kerneltest.TypeName(c.wt)+"/variant="+c.name+"/shape="+s.String(), func(b *testing.B) {
				kerneltest.BenchMatVec(b, c.wt, c.f, s)
			})
		}
	}
}

func TestMatVecVsGGML(t *testing.T) {
	for _, c := range []struct {
		wt quant.Type
		f  kerneltest.MatVecFunc
	}{
		{quant.Q4_K, gounrolled.MatVecQ4K},
		{quant.Q6_K, gounrolled.MatVecQ6K},
		{quant.Q8_0, gounrolled.MatVecQ8_0},
		{quant.F32, gounrolled.MatVecF32},
		{quant.F16, gounrolled.MatVecF16},
		{quant.BF16, gounrolled.MatVecBF16},
	} {
		t.Run(c.wt.String(), func(t *testing.T) { ggmltest.MatVec(t, c.wt, c.f) })
	}
}
