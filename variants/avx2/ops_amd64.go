//go:build !noasm

package avx2

import "github.com/damascus-llm/damascus/ledger"

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

// RMSNorm sets dst[i] = x[i] / sqrt(mean(x²)+eps) * weight[i], summing the
// squares in float64 as ggml does. dst may be x.
func RMSNorm(dst, x, weight []float32, eps float32) {
	if len(x) == 0 {
		return
	}
	_, _ = dst[len(x)-1], weight[len(x)-1]
	rmsNormAVX2(&dst[0], &x[0], &weight[0], len(x), eps)
}

// SiLUMul sets dst[i] = silu(gate[i]) * up[i] with a vector exp. dst may
// alias gate or up.
func SiLUMul(dst, gate, up []float32) {
	if len(dst) == 0 {
		return
	}
	_, _ = gate[len(dst)-1], up[len(dst)-1]
	siluMulAVX2(&dst[0], &gate[0], &up[0], len(dst))
}

// Softmax replaces x by softmax(x): maximum subtracted, vector exp, sum in
// float64.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	softmaxAVX2(&x[0], len(x))
}

// RoPE rotates each of nHeads heads of x in place by the angles whose
// cosines and sines are cos[i], sin[i] (headDim/2 of each).
func RoPE(x []float32, nHeads, headDim int, cos, sin []float32, neox bool) {
	half := headDim / 2
	if nHeads <= 0 || half == 0 {
		return
	}
	_, _, _ = x[nHeads*headDim-1], cos[half-1], sin[half-1]
	if neox {
		ropeNeoXAVX2(&x[0], nHeads, headDim, &cos[0], &sin[0])
		return
	}
	ropePairsAVX2(&x[0], nHeads, headDim, &cos[0], &sin[0])
}

func init() {
	features := []string{"avx2", "fma"}
	for op, impl := range map[string]any{
		ledger.OpRMSNorm: ledger.RMSNorm(RMSNorm),
		ledger.OpSiLUMul: ledger.SiLUMul(SiLUMul),
		ledger.OpSoftmax: ledger.Softmax(Softmax),
		ledger.OpRoPE:    ledger.RoPE(RoPE),
	} {
		ledger.Register(ledger.Variant{Op: op, Name: "avx2", Family: ledger.FamilyAVX2, Features: features,
			Impl: impl, Notes: "8 lanes under a VMASKMOVPS lane mask (no scalar tails); Cephes expf, 2^n in the exponent bits; float64 sums"})
	}
}
