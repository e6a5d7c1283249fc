package ledgertest

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/internal/ggml"
	"github.com/damascus-llm/damascus/quant"
)

// GGMLMatVec checks a matvec kernel against the pinned llama.cpp's own CPU
// vec_dot, an oracle independent of this package's reference: weights made
// by ggml's quantizer from Gaussian values, activations by the CPU backend's
// activation quantizer. It skips when the pinned llama.cpp is not installed.
func GGMLMatVec(t *testing.T, wt quant.Type, f MatVecFunc) {
	RequireGGML(t)
	r := NewRand(uint64(wt) + 100)
	xt := ActivationType(wt)
	for _, k := range []int{256, 3072} {
		const rows = 7
		w, err := ggmlWeights(wt, Floats(r, rows*k), rows, k)
		if err != nil {
			t.Fatal(err)
		}
		xf := Floats(r, k)
		var xq []byte
		if xt == wt && (wt == quant.F32 || wt == quant.F16 || wt == quant.BF16) {
			xq = Encode(wt, xf)
		} else if xq, err = ggml.QuantizeRowCPU(xt, xf); err != nil {
			t.Fatal(err)
		}
		buf, dst := Guarded(rows)
		f(dst, w, xq, k)
		CheckGuards(t, buf)
		rowBytes := len(w) / rows
		for i := 0; i < rows; i++ {
			row := w[i*rowBytes : (i+1)*rowBytes]
			want, err := ggml.VecDot(wt, k, row, xq)
			if err != nil {
				t.Fatal(err)
			}
			_, scale := Dot(wt, xt, row, xq, k)
			if !Close(dst[i], float64(want), scale, Tolerance(wt, k)) {
				t.Fatalf("k=%d row %d vs ggml vec_dot: %s", k, i, Describe(dst[i], float64(want), scale))
			}
		}
	}
}

func ggmlWeights(wt quant.Type, x []float32, rows, k int) ([]byte, error) {
	switch wt {
	case quant.F32, quant.F16, quant.BF16:
		return Encode(wt, x), nil
	}
	w, err := ggml.Quantize(wt, x, rows, k)
	if err != nil {
		return nil, fmt.Errorf("ggml quantize %s: %w", wt, err)
	}
	return w, nil
}

// RequireGGML skips t when the pinned llama.cpp's ggml is not usable (make
// baseline installs it): the gate of the tests that check against ggml.
func RequireGGML(t testing.TB) {
	t.Helper()
	if err := ggml.Available(); err != nil {
		t.Skipf("pinned llama.cpp not usable (run make baseline): %v", err)
	}
}
