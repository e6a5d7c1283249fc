// Package rowops adapts one instruction set's row-op and matrix-vector
// assembly kernels (pointers and lengths) to the ledger's slice contracts and
// registers the row ops, so the bounds checks and empty-input cases live in
// one place for every instruction set.
package rowops

import "github.com/damascus-llm/damascus/ledger"

// Kernels are the assembly entry points of one instruction set's row ops.
type Kernels struct {
	RMSNormK   func(dst, x, w *float32, n int, eps float32)
	SiLUMulK   func(dst, gate, up *float32, n int)
	SoftmaxK   func(x *float32, n int)
	RoPEPairsK func(x *float32, nHeads, headDim int, cos, sin *float32)
	RoPENeoXK  func(x *float32, nHeads, headDim int, cos, sin *float32)
}

// RMSNorm sets dst[i] = x[i] / sqrt(mean(x²)+eps) * weight[i], summing the
// squares in float64 as ggml does. dst may be x.
func (k Kernels) RMSNorm(dst, x, weight []float32, eps float32) {
	if len(x) == 0 {
		return
	}
	_, _ = dst[len(x)-1], weight[len(x)-1]
	k.RMSNormK(&dst[0], &x[0], &weight[0], len(x), eps)
}

// SiLUMul sets dst[i] = silu(gate[i]) * up[i] with a vector exp. dst may
// alias gate or up.
func (k Kernels) SiLUMul(dst, gate, up []float32) {
	if len(dst) == 0 {
		return
	}
	_, _ = gate[len(dst)-1], up[len(dst)-1]
	k.SiLUMulK(&dst[0], &gate[0], &up[0], len(dst))
}

// Softmax replaces x by softmax(x): maximum subtracted, vector exp, sum in
// float64.
func (k Kernels) Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	k.SoftmaxK(&x[0], len(x))
}

// RoPE rotates each of nHeads heads of x in place by the angles whose
// cosines and sines are cos[i], sin[i] (headDim/2 of each).
func (k Kernels) RoPE(x []float32, nHeads, headDim int, cos, sin []float32, neox bool) {
	half := headDim / 2
	if nHeads <= 0 || half == 0 {
		return
	}
	_, _, _ = x[nHeads*headDim-1], cos[half-1], sin[half-1]
	if neox {
		k.RoPENeoXK(&x[0], nHeads, headDim, &cos[0], &sin[0])
		return
	}
	k.RoPEPairsK(&x[0], nHeads, headDim, &cos[0], &sin[0])
}

// Register adds the four ops to the ledger as variant name.
func (k Kernels) Register(name string, family ledger.Family, features []string, notes string) {
	for op, impl := range map[string]any{
		ledger.OpRMSNorm: ledger.RMSNorm(k.RMSNorm),
		ledger.OpSiLUMul: ledger.SiLUMul(k.SiLUMul),
		ledger.OpSoftmax: ledger.Softmax(k.Softmax),
		ledger.OpRoPE:    ledger.RoPE(k.RoPE),
	} {
		ledger.Register(ledger.Variant{Op: op, Name: name, Family: family, Features: features, Impl: impl, Notes: notes})
	}
}
