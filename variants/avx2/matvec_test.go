//go:build amd64 && !noasm

package avx2

import (
	"testing"

	"strings"

	"github.com/damascus-llm/damascus/harness/llamacpp/ggmltest"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

// need skips t unless this machine (CPU and OS) has what the kernels use.
func need(t testing.TB) {
	t.Helper()
	if missing := cpufeat.Missing("avx2", "fma", "f16c"); len(missing) > 0 {
		t.Skipf("machine lacks %s", strings.Join(missing, ", "))
	}
}

var matVecCases = []struct {
	wt quant.Type
	f  kerneltest.MatVecFunc
}{
	{quant.Q4_K, MatVecQ4K},
	{quant.Q6_K, MatVecQ6K},
	{quant.Q8_0, MatVecQ8_0},
	{quant.F32, MatVecF32},
	{quant.F16, MatVecF16},
}

func TestMatVec(t *testing.T) {
	for _, c := range matVecCases {
		t.Run(c.wt.String(), func(t *testing.T) {
			need(t)
			kerneltest.MatVec(t, c.wt, c.f)
		})
	}
}

func TestMatVecVsGGML(t *testing.T) {
	for _, c := range matVecCases {
		t.Run(c.wt.String(), func(t *testing.T) {
			need(t)
			ggmltest.MatVec(t, c.wt, c.f)
		})
	}
}

func BenchmarkMatVec(b *testing.B) {
	for _, c := range matVecCases {
		for _, s := range kerneltest.Shapes {
			b.Run("type="+kerneltest.TypeName(c.wt)+"/variant=avx2/shape="+s.String(), func(b *testing.B) {
				need(b)
				kerneltest.BenchMatVec(b, c.wt, c.f, s)
			})
		}
	}
}
