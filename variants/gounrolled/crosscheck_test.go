package gounrolled_test

import (
	"math"
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled"
)

// The float64 reference the kernel tests trust must agree with quant's
// dequantizers (themselves checked against ggml), block for block.
func TestReferenceMatchesModelQuant(t *testing.T) {
	r := ledgertest.NewRand(21)
	const k = 256 * 8
	for _, m := range ledgertest.Modes {
		for _, c := range []struct {
			t    quant.Type
			data []byte
		}{
			{quant.Q4_K, ledgertest.Q4K(r, k/256, m)},
			{quant.Q6_K, ledgertest.Q6K(r, k/256, m)},
			{quant.Q8_0, ledgertest.Q8_0(r, k/32, m)},
			{quant.Q8_K, ledgertest.Q8K(r, k/256, m)},
			{quant.F16, ledgertest.BytesF16(ledgertest.Floats(r, k))},
			{quant.BF16, ledgertest.BytesBF16(ledgertest.Floats(r, k))},
		} {
			want := make([]float32, k)
			if err := quant.Dequantize(c.t, c.data, want); err != nil {
				t.Fatalf("%s: %v", c.t, err)
			}
			got := ledgertest.Dequantize(c.t, c.data, k)
			for i := range got {
				// quant rounds to float32 once per product (Q4_K: twice,
				// d·sc·q - dmin·m, so the error scales with the subtracted term).
				mag := math.Abs(got[i])
				if c.t == quant.Q4_K {
					mag += 2 * ledgertest.Q4KMinMagnitude(c.data, i)
				}
				if math.Abs(got[i]-float64(want[i])) > 3e-7*mag+1e-38 {
					t.Fatalf("%s/%s [%d]: reference %v, quant %v", c.t, m, i, got[i], want[i])
				}
			}
		}
	}
}

func TestHalfMatchesModelQuant(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		a, b := gounrolled.FP16ToFloat32(uint16(i)), quant.FP16ToFloat32(uint16(i))
		if math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
			t.Fatalf("FP16ToFloat32(%#04x): %v here, %v in quant", i, a, b)
		}
	}
	r := ledgertest.NewRand(22)
	for i := 0; i < 1<<16; i++ {
		f := math.Float32frombits(r.Uint32())
		if f != f {
			continue
		}
		if a, b := gounrolled.Float32ToFP16(f), quant.Float32ToFP16(f); a != b {
			t.Fatalf("Float32ToFP16(%g): %#04x here, %#04x in quant", f, a, b)
		}
	}
}
