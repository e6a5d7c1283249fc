//go:build !noasm

package avx512

import (
	"testing"

	"github.com/damascus-llm/damascus/model/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

func TestQuantizeQ8K(t *testing.T) {
	need(t, "avx512f", "avx512bw", "avx512vl")
	kerneltest.Quantize(t, quant.Q8_K, QuantizeQ8K)
}
