package promoted

import (
	"os"
	"sort"
	"sync"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The package's default dispatcher (the embedded preferences, the global
// registry, DAMASCUS_KERNELS) and the functions the engine calls through it.

// MatVecBatchKernel is Default().MatVecBatchKernel.
func MatVecBatchKernel(wt quant.Type) (MatMulKernel, error) {
	return validated((*Dispatcher).MatVecBatchKernel, wt)
}

// AttentionHalf is Default().AttentionHalf.
func AttentionHalf(t quant.Type) (ledger.AttentionHalf, error) {
	return validated((*Dispatcher).AttentionHalf, t)
}

// AttentionBatchAt is Default().AttentionBatchAt.
func AttentionBatchAt(p ledger.Precision) (ledger.AttentionBatch, error) {
	return validated((*Dispatcher).AttentionBatchAt, p)
}

var (
	defaultOnce sync.Once
	defaultD    *Dispatcher
	defaultErr  error
)

func initDefault() {
	defaultOnce.Do(func() {
		prefs, err := Embedded()
		if err != nil {
			defaultErr = err
			prefs = Preferences{Ops: map[string][]Choice{}}
		}
		over, err := ParseOverrides(os.Getenv(OverrideEnv))
		if err != nil && defaultErr == nil {
			defaultErr = err
		}
		if err := cpufeat.HideError(); err != nil && defaultErr == nil {
			defaultErr = err // a typo there would test the wrong fallbacks
		}
		defaultD = NewDispatcher(prefs, ledger.Default, over)
	})
}

// Validate reports, as an error naming the problem, anything that would make
// the package functions fail: a malformed embedded preferences file or
// $DAMASCUS_KERNELS or $DAMASCUS_CPU_HIDE, or an override naming a variant that is unknown or
// cannot run here. Programs call it at start-up so that a typo in the
// environment is a clear message, not a failure deep in a forward pass.
func Validate() error {
	initDefault()
	if defaultErr != nil {
		return defaultErr
	}
	ops := make([]string, 0, len(defaultD.overrides))
	for op := range defaultD.overrides {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		if _, err := defaultD.Resolve(op); err != nil {
			return err
		}
	}
	return nil
}

// Default is the dispatcher behind the package functions: the embedded
// preferences, the default registry and $DAMASCUS_KERNELS. The functions
// returning an error report a bad override there; the f32 ops, whose
// signatures have no error, panic with Validate's message instead.
func Default() *Dispatcher {
	initDefault()
	return defaultD
}

// validated runs get on the default dispatcher once Validate has checked
// $DAMASCUS_KERNELS and the preferences against the registry.
func validated[A, T any](get func(*Dispatcher, A) (T, error), a A) (T, error) {
	if err := Validate(); err != nil {
		var zero T
		return zero, err
	}
	return get(Default(), a)
}

// MatVec returns the engine's matrix-vector kernel for weight type wt.
func MatVec(wt quant.Type) (ledger.MatVec, error) {
	return validated((*Dispatcher).MatVec, wt)
}

// MatVecFor returns the engine's matrix-vector kernel for weight type wt
// with its ID and weight layout.
func MatVecFor(wt quant.Type) (MatVecKernel, error) {
	return validated((*Dispatcher).MatVecKernel, wt)
}

// MatMul returns the engine's matrix-matrix kernel for weight type wt.
func MatMul(wt quant.Type) (ledger.MatMul, error) {
	return validated((*Dispatcher).MatMul, wt)
}

// MatMulFor returns the engine's matrix-matrix kernel for weight type wt
// with its ID and prepared form.
func MatMulFor(wt quant.Type) (MatMulKernel, error) {
	return validated((*Dispatcher).MatMulKernel, wt)
}

// Quantize returns the engine's activation quantizer into type t.
func Quantize(t quant.Type) (ledger.Quantize, error) {
	return validated((*Dispatcher).Quantize, t)
}

// Dequantize returns the engine's dequantizer from type t.
func Dequantize(t quant.Type) (ledger.Dequantize, error) {
	return validated((*Dispatcher).Dequantize, t)
}

// RMSNorm returns the engine's RMS normalization kernel.
func RMSNorm() ledger.RMSNorm { return Default().RMSNorm() }

// SiLUMul returns the engine's SwiGLU gate kernel.
func SiLUMul() ledger.SiLUMul { return Default().SiLUMul() }

// Softmax returns the engine's softmax kernel.
func Softmax() ledger.Softmax { return Default().Softmax() }

// RoPE returns the engine's rotary embedding kernel.
func RoPE() ledger.RoPE { return Default().RoPE() }

// Attention returns the engine's single-token attention kernel.
func Attention() ledger.Attention { return Default().Attention() }

// AttentionBatch returns the engine's causal batch attention kernel (prefill).
func AttentionBatch() ledger.AttentionBatch { return Default().AttentionBatch() }

// Chosen lists what the engine's ops resolved to so far.
func Chosen() []string { return Default().Chosen() }
