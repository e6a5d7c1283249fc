//go:build !noasm

package avx2

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func rmsNormAVX2(dst, x, w *float32, n int, eps float32)

//go:noescape
func siluMulAVX2(dst, gate, up *float32, n int)

//go:noescape
func softmaxAVX2(x *float32, n int)

//go:noescape
func ropePairsAVX2(x *float32, nHeads, headDim int, cos, sin *float32)

//go:noescape
func ropeNeoXAVX2(x *float32, nHeads, headDim int, cos, sin *float32)

// ops are the row ops (RMSNorm, SiLUMul, Softmax, RoPE) on this package's
// kernels; rowops states their contracts.
var ops = rowops.Kernels{
	RMSNormK:   rmsNormAVX2,
	SiLUMulK:   siluMulAVX2,
	SoftmaxK:   softmaxAVX2,
	RoPEPairsK: ropePairsAVX2,
	RoPENeoXK:  ropeNeoXAVX2,
}

func init() {
	ops.Register("avx2", ledger.FamilyAVX2, []string{"avx2", "fma"},
		"8 lanes under a VMASKMOVPS lane mask (no scalar tails); Cephes expf, 2^n in the exponent bits; float64 sums")
}
