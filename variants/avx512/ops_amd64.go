//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func rmsNormAVX512(dst, x, w *float32, n int, eps float32)

//go:noescape
func siluMulAVX512(dst, gate, up *float32, n int)

//go:noescape
func softmaxAVX512(x *float32, n int)

//go:noescape
func ropePairsAVX512(x *float32, nHeads, headDim int, cos, sin *float32)

//go:noescape
func ropeNeoXAVX512(x *float32, nHeads, headDim int, cos, sin *float32)

// ops are the row ops (RMSNorm, SiLUMul, Softmax, RoPE) on this package's
// kernels; rowops states their contracts.
var ops = rowops.Kernels{
	RMSNormK:   rmsNormAVX512,
	SiLUMulK:   siluMulAVX512,
	SoftmaxK:   softmaxAVX512,
	RoPEPairsK: ropePairsAVX512,
	RoPENeoXK:  ropeNeoXAVX512,
}

func init() {
	ops.Register("avx512", ledger.FamilyAVX512, []string{"avx512f", "avx512vl"},
		"16 lanes under a K-mask (no scalar tails); Cephes expf with VSCALEFPS; float64 sums")
}
