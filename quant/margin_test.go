package quant

import (
	"math/rand/v2"
	"testing"
)

func TestRoundingMargin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 2*QK_K)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	for _, typ := range []Type{Q8_K, Q8_0, Q8_1} {
		m, i, ok := RoundingMargin(typ, x)
		if !ok || i < 0 || m < 0 || m > 0.5 {
			t.Fatalf("%s: random values: margin %g at %d, ok %v", typ, m, i, ok)
		}
		// Put one value exactly on a tie: 2.5 steps of a block whose
		// largest magnitude is 127 steps (x·iscale exact in float32).
		y := make([]float32, len(x))
		copy(y, x)
		blk := 32
		if typ == Q8_K {
			blk = QK_K
		}
		b := len(y) - blk
		for j := range blk {
			y[b+j] = float32(j%5) * 0.2 // below the block's max, none near a tie
		}
		y[b] = 127
		y[b+7] = 2.5
		m, i, _ = RoundingMargin(typ, y)
		if m != 0 || i != b+7 {
			t.Errorf("%s: a value on a tie: margin %g at %d, want 0 at %d", typ, m, i, b+7)
		}
		// The tie is real: one ulp either side changes its code.
		lo, hi := make([]byte, 0), make([]byte, 0)
		for _, d := range []float32{-1e-5, 1e-5} {
			z := append([]float32(nil), y...)
			z[b+7] += d
			q := make([]byte, mustRowSize(t, typ, len(z)))
			if err := Quantize(typ, z, q); err != nil {
				t.Fatal(err)
			}
			if d < 0 {
				lo = q
			} else {
				hi = q
			}
		}
		if string(lo) == string(hi) {
			t.Errorf("%s: values either side of the reported tie quantize alike", typ)
		}
	}
	if _, _, ok := RoundingMargin(F16, x); ok {
		t.Error("F16: ok, want a type the margin does not model")
	}
	if _, _, ok := RoundingMargin(Q8_K, x[:100]); ok {
		t.Error("Q8_K on 100 values: ok, want not a whole block")
	}
}

func mustRowSize(t *testing.T, typ Type, n int) int {
	t.Helper()
	s, err := RowSize(typ, int64(n))
	if err != nil {
		t.Fatal(err)
	}
	return int(s)
}
