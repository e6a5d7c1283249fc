package reference

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// TestDecodeAgreesWithModelQuant cross-checks two independent decoders of
// every block type: this package's float64 formulas and quant's
// float32 code (itself tested against ggml). They may differ by float32
// rounding only.
func TestDecodeAgreesWithModelQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q4_0, quant.Q8_K, quant.Q4_K, quant.Q6_K} {
		n := 2 * max(typ.BlockSize(), 32)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		size, _ := quant.RowSize(typ, int64(n))
		src := make([]byte, size)
		if err := quant.Quantize(typ, x, src); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, n)
		if err := quant.Dequantize(typ, src, want); err != nil {
			t.Fatal(err)
		}
		got, err := Decode(typ, src, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if d := math.Abs(got[i] - float64(want[i])); d > 1e-6*math.Max(1, math.Abs(got[i])) {
				t.Errorf("%s value %d: reference %g, quant %g", typ, i, got[i], want[i])
				break
			}
		}
	}
	if _, err := Decode(quant.Q5_1, make([]byte, 24), 32); err == nil {
		t.Error("Decode of an unsupported type: no error")
	}
	if _, err := Decode(quant.Q4_K, make([]byte, 10), 256); err == nil {
		t.Error("Decode of a short buffer: no error")
	}
}

func TestFormulas(t *testing.T) {
	if y := Softmax([]float64{0, math.Log(3)}); math.Abs(y[0]-0.25) > 1e-15 || math.Abs(y[1]-0.75) > 1e-15 {
		t.Errorf("softmax = %v", y)
	}
	if y := RMSNorm([]float32{3, 4}, []float32{1, 2}, 0); math.Abs(y[0]-3/math.Sqrt(12.5)) > 1e-15 || math.Abs(y[1]-8/math.Sqrt(12.5)) > 1e-15 {
		t.Errorf("rmsnorm = %v", y)
	}
	if y := SiLUMul([]float32{0}, []float32{5}); y[0] != 0 {
		t.Errorf("silu(0)·5 = %v", y[0])
	}
	a := Attention([]float32{1, 0}, []float32{1, 0, 1, 0}, []float32{2, 0, 4, 0}, 1, 1, 2, 2, 1)
	if math.Abs(a[0]-3) > 1e-15 { // equal scores: mean of values
		t.Errorf("attention = %v", a)
	}
	// Two tokens at positions 1 and 2 (ld 3: one ignored value between the
	// queries): the first sees positions 0-1, the second 0-2.
	b := AttentionBatch([]float32{1, 0, 99, 1, 0}, 3, []float32{1, 0, 1, 0, 1, 0}, []float32{2, 0, 4, 0, 9, 0}, 2, 1, 1, 2, 1, 1)
	if len(b) != 4 || math.Abs(b[0]-3) > 1e-15 || math.Abs(b[2]-5) > 1e-15 {
		t.Errorf("attention batch = %v", b)
	}
}
