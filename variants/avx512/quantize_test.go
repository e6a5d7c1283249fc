//go:build amd64 && !noasm

package avx512

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

func TestQuantizeQ8K(t *testing.T) {
	need(t, "avx512f", "avx512bw", "avx512vl")
	kerneltest.Quantize(t, quant.Q8_K, QuantizeQ8K)
}

func TestQuantizeQ8_0(t *testing.T) {
	need(t, "avx512f", "avx512bw", "avx512vl")
	kerneltest.Quantize(t, quant.Q8_0, QuantizeQ8_0)
}

func BenchmarkQuantize(b *testing.B) {
	need(b, "avx512f", "avx512bw", "avx512vl")
	for _, n := range kerneltest.Widths {
		b.Run(fmt.Sprintf("type=q8_k/variant=avx512/n=%d", n), func(b *testing.B) {
			kerneltest.BenchQuantize(b, quant.Q8_K, QuantizeQ8K, n)
		})
		b.Run(fmt.Sprintf("type=q8_0/variant=avx512/n=%d", n), func(b *testing.B) {
			kerneltest.BenchQuantize(b, quant.Q8_0, QuantizeQ8_0, n)
		})
	}
}
