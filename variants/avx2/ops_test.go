//go:build amd64 && !noasm

package avx2

import (
	"testing"

	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

func TestRMSNorm(t *testing.T) { need(t); kerneltest.RMSNorm(t, ops.RMSNorm) }
func TestSiLUMul(t *testing.T) { need(t); kerneltest.SiLUMul(t, ops.SiLUMul) }
func TestSoftmax(t *testing.T) { need(t); kerneltest.Softmax(t, ops.Softmax) }
func TestRoPE(t *testing.T)    { need(t); kerneltest.RoPE(t, ops.RoPE) }

func BenchmarkOps(b *testing.B) {
	need(b)
	kerneltest.BenchOps(b, "avx2", ops.RMSNorm, ops.SiLUMul, ops.Softmax, ops.RoPE)
}
