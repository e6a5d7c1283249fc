package gounrolled_test

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/quant"

	"github.com/damascus-llm/damascus/variants/gounrolled"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

func TestRMSNorm(t *testing.T) { kerneltest.RMSNorm(t, gounrolled.RMSNorm) }
func TestSiLUMul(t *testing.T) { kerneltest.SiLUMul(t, gounrolled.SiLUMul) }
func TestSoftmax(t *testing.T) { kerneltest.Softmax(t, gounrolled.Softmax) }
func TestRoPE(t *testing.T)    { kerneltest.RoPE(t, gounrolled.RoPE) }

func BenchmarkOps(b *testing.B) {
	kerneltest.BenchOps(b, "go-unrolled", gounrolled.RMSNorm, gounrolled.SiLUMul, gounrolled.Softmax, gounrolled.RoPE)
}

func BenchmarkQuantize(b *testing.B) {
	for _, n := range kerneltest.Widths {
		b.Run(fmt.Sprintf("type=q8_k/variant=go-unrolled/n=%d", n), func(b *testing.B) {
			kerneltest.BenchQuantize(b, quant.Q8_K, gounrolled.QuantizeQ8K, n)
		})
		b.Run(fmt.Sprintf("type=q8_0/variant=go-unrolled/n=%d", n), func(b *testing.B) {
			kerneltest.BenchQuantize(b, quant.Q8_0, gounrolled.QuantizeQ8_0, n)
		})
	}
}
