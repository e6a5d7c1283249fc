// Package ggmltest checks kernels against the pinned llama.cpp's own CPU
// code, loaded through purego. It lives with the llama.cpp harness, not
// under the variants, so that no variant package imports the harness; and
// apart from kerneltest so that tests which cannot load it (cross-built
// arm64 binaries under qemu) need not link it.
package ggmltest

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

// MatVec checks a matvec kernel against the pinned llama.cpp's own CPU
// vec_dot, an oracle independent of this package's reference: weights made
// by ggml's quantizer from Gaussian values, activations by the CPU backend's
// activation quantizer. It skips when the pinned llama.cpp is not installed.
func MatVec(t *testing.T, wt quant.Type, f kerneltest.MatVecFunc) {
	if err := llamacpp.Available(); err != nil {
		t.Skipf("pinned llama.cpp not usable (run make baseline): %v", err)
	}
	r := kerneltest.NewRand(uint64(wt) + 100)
	xt := kerneltest.ActivationType(wt)
	for _, k := range []int{256, 3072} {
		const rows = 7
		w, err := ggmlWeights(wt, kerneltest.Floats(r, rows*k), rows, k)
		if err != nil {
			t.Fatal(err)
		}
		xf := kerneltest.Floats(r, k)
		var xq []byte
		if xt == wt && (wt == quant.F32 || wt == quant.F16 || wt == quant.BF16) {
			xq = kerneltest.Encode(wt, xf)
		} else if xq, err = llamacpp.QuantizeRowCPU(xt, xf); err != nil {
			t.Fatal(err)
		}
		buf, dst := kerneltest.Guarded(rows)
		f(dst, w, xq, k)
		kerneltest.CheckGuards(t, buf)
		rowBytes := len(w) / rows
		for i := 0; i < rows; i++ {
			row := w[i*rowBytes : (i+1)*rowBytes]
			want, err := llamacpp.VecDot(wt, k, row, xq)
			if err != nil {
				t.Fatal(err)
			}
			_, scale := kerneltest.Dot(wt, xt, row, xq, k)
			if !kerneltest.Close(dst[i], float64(want), scale, kerneltest.Tolerance(wt, k)) {
				t.Fatalf("k=%d row %d vs ggml vec_dot: %s", k, i, kerneltest.Describe(dst[i], float64(want), scale))
			}
		}
	}
}

func ggmlWeights(wt quant.Type, x []float32, rows, k int) ([]byte, error) {
	switch wt {
	case quant.F32, quant.F16, quant.BF16:
		return kerneltest.Encode(wt, x), nil
	}
	w, err := llamacpp.Quantize(wt, x, rows, k)
	if err != nil {
		return nil, fmt.Errorf("ggml quantize %s: %w", wt, err)
	}
	return w, nil
}
