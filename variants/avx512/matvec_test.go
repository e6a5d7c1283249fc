//go:build amd64 && !noasm

package avx512

import (
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp/ggmltest"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

var matVecCases = []struct {
	name     string
	wt       quant.Type
	f        kerneltest.MatVecFunc
	features []string
}{
	{"avx512", quant.Q4_K, MatVecQ4K, []string{"avx512f", "avx512bw", "avx512vl"}},
	{"avx512vnni", quant.Q4_K, MatVecQ4KVNNI, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512vnni4row", quant.Q4_K, MatVecQ4K4VNNI, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512vnnix", quant.Q4_K, MatVecQ4KVNNIX, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512vnniprefetch", quant.Q4_K, MatVecQ4KVNNIPrefetch, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512vnniprefetch", quant.Q6_K, MatVecQ6KVNNIPrefetch, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512vnnipf8k", quant.Q4_K, matVecPrefetch(q4kRowsVNNIPrefetch, 8<<10), []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512vnnipf8k", quant.Q6_K, matVecPrefetch(q6kRowsVNNIPrefetch, 8<<10), []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512vnni4row", quant.Q6_K, MatVecQ6K4VNNI, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512", quant.Q8_0, MatVecQ8_0, []string{"avx512f", "avx512bw", "avx512vl"}},
	{"avx512vnni", quant.Q8_0, MatVecQ8_0VNNI, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
	{"avx512", quant.F32, MatVecF32, []string{"avx512f", "avx512bw", "avx512vl"}},
	{"avx512", quant.F16, MatVecF16, []string{"avx512f", "avx512bw", "avx512vl"}},
	{"avx512", quant.BF16, MatVecBF16, []string{"avx512f", "avx512bw", "avx512vl"}},
	{"avx512bf16", quant.BF16, MatVecBF16Dot, []string{"avx512f", "avx512bw", "avx512vl", "avx512bf16"}},
	{"avx512", quant.Q6_K, MatVecQ6K, []string{"avx512f", "avx512bw", "avx512vl"}},
	{"avx512vnni", quant.Q6_K, MatVecQ6KVNNI, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}},
}

func TestMatVec(t *testing.T) {
	for _, c := range matVecCases {
		t.Run(c.wt.String()+"/"+c.name, func(t *testing.T) {
			need(t, c.features...)
			kerneltest.MatVec(t, c.wt, c.f)
		})
	}
}

func BenchmarkMatVec(b *testing.B) {
	for _, c := range matVecCases {
		for _, s := range kerneltest.Shapes {
			b.Run("type="+kerneltest.TypeName(c.wt)+"/variant="+c.name+"/shape="+s.String(), func(b *testing.B) {
				need(b, c.features...)
				kerneltest.BenchMatVec(b, c.wt, c.f, s)
			})
		}
	}
}

func TestMatVecVsGGML(t *testing.T) {
	for _, c := range matVecCases {
		t.Run(c.wt.String()+"/"+c.name, func(t *testing.T) {
			need(t, c.features...)
			ggmltest.MatVec(t, c.wt, c.f)
		})
	}
}
