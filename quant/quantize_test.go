package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/numcmp"
)

var quantTypes = []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K}

func quantizeRow(t *testing.T, typ Type, x []float32) []byte {
	t.Helper()
	size, err := RowSize(typ, int64(len(x)))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if err := Quantize(typ, x, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func roundTrip(t *testing.T, typ Type, x []float32) []float32 {
	t.Helper()
	y := make([]float32, len(x))
	if err := Dequantize(typ, quantizeRow(t, typ, x), y); err != nil {
		t.Fatal(err)
	}
	return y
}

func gaussian(n int, seed uint64, std float64) []float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * std)
	}
	return x
}

// Round trips on Gaussian weights stay within bounds set by each format's
// bits (the bound is about 1.5× the error the format reaches).
func TestQuantizeRoundTripError(t *testing.T) {
	bounds := map[Type]float64{
		F32: 0, F16: 1e-3, BF16: 8e-3,
		Q8_0: 0.01, Q8_1: 0.01, Q8_K: 0.01,
		Q6_K: 0.035, Q5_0: 0.06, Q5_1: 0.05, Q5_K: 0.05,
		Q4_0: 0.12, Q4_1: 0.1, Q4_K: 0.1,
		Q3_K: 0.25, Q2_K: 0.5,
	}
	x := gaussian(4096, 1, 0.02)
	for _, typ := range quantTypes {
		e := numcmp.RelRMSE(x, roundTrip(t, typ, x))
		t.Logf("%-5s relative RMSE %.4f", typ, e)
		if e > bounds[typ] {
			t.Errorf("%s relative RMSE %.4f, want ≤ %.4f", typ, e, bounds[typ])
		}
	}
}

// Q8_0 with the largest magnitude 127 has d = 1, so quants are the inputs
// rounded half away from zero.
func TestQuantizeQ8_0Known(t *testing.T) {
	x := make([]float32, 32)
	x[0], x[1], x[2], x[3], x[4] = 127, 2.5, -2.5, 0.49, -126.6
	b := quantizeRow(t, Q8_0, x)
	if d := binary.LittleEndian.Uint16(b); d != 0x3c00 {
		t.Fatalf("d = %#04x, want 0x3c00 (1.0)", d)
	}
	want := []int8{127, 3, -3, 0, -127}
	for i, w := range want {
		if got := int8(b[2+i]); got != w {
			t.Errorf("q[%d] = %d, want %d", i, got, w)
		}
	}
}

// Q4_0 with −8 the value of largest magnitude has d = 1: q = trunc(x + 8.5)
// capped at 15.
func TestQuantizeQ4_0Known(t *testing.T) {
	x := make([]float32, 32)
	x[0], x[1], x[2], x[16], x[17] = -8, 7.9, 0.4, 3, -0.6
	b := quantizeRow(t, Q4_0, x)
	if d := binary.LittleEndian.Uint16(b); d != 0x3c00 {
		t.Fatalf("d = %#04x, want 0x3c00 (1.0)", d)
	}
	// byte j: low nibble value j, high nibble value j+16.
	want := map[int]byte{0: 0 | 11<<4, 1: 15 | 7<<4, 2: 8 | 8<<4, 3: 8 | 8<<4}
	for j, w := range want {
		if b[2+j] != w {
			t.Errorf("qs[%d] = %#02x, want %#02x", j, b[2+j], w)
		}
	}
}

// Q8_K with 127 the value of largest magnitude has iscale = −1: d = −1 and
// q = −x rounded half to even; bsums hold the sums of 16 quants.
func TestQuantizeQ8KKnown(t *testing.T) {
	x := make([]float32, 256)
	x[0], x[1], x[2], x[17] = 127, 2.5, 3.5, -5
	b := quantizeRow(t, Q8_K, x)
	if d := math.Float32frombits(binary.LittleEndian.Uint32(b)); d != -1 {
		t.Fatalf("d = %g, want -1", d)
	}
	for i, w := range map[int]int8{0: -127, 1: -2, 2: -4, 17: 5, 3: 0} {
		if got := int8(b[4+i]); got != w {
			t.Errorf("q[%d] = %d, want %d", i, got, w)
		}
	}
	if s := int16(binary.LittleEndian.Uint16(b[260:])); s != -133 {
		t.Errorf("bsums[0] = %d, want -133", s)
	}
	if s := int16(binary.LittleEndian.Uint16(b[262:])); s != 5 {
		t.Errorf("bsums[1] = %d, want 5", s)
	}
}

// A block whose sub-blocks hold 0..15 twice is fitted with min 0 and the
// largest scale, so every quant equals its input and every stored scale is 63.
func TestQuantizeQ4KGrid(t *testing.T) {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(i % 16)
	}
	b := quantizeRow(t, Q4_K, x)
	if dmin := binary.LittleEndian.Uint16(b[2:]); dmin != 0 {
		t.Errorf("dmin = %#04x, want 0", dmin)
	}
	for s := 0; s < 8; s++ {
		if sc, m := ScaleMinK4(s, b[4:16]); sc != 63 || m != 0 {
			t.Errorf("sub-block %d: scale %d min %d, want 63, 0", s, sc, m)
		}
	}
	for l, q := range b[16:] {
		if want := byte(l%16) * 0x11; q != want {
			t.Fatalf("qs[%d] = %#02x, want %#02x", l, q, want)
		}
	}
}

func TestQuantizeAdversarial(t *testing.T) {
	const n = 512
	inputs := map[string][]float32{
		"zeros":     make([]float32, n),
		"denormals": fill(n, func(i int) float32 { return float32(i%7-3) * 1e-41 }),
		"equal":     fill(n, func(int) float32 { return 0.75 }),
		"huge":      fill(n, func(i int) float32 { return float32(i%9-4) * 1e4 }),
		"one-spike": fill(n, func(i int) float32 {
			if i%256 == 3 {
				return 1000
			}
			return float32(i%5) * 1e-3
		}),
		"max-float": fill(n, func(i int) float32 { return float32(i%3-1) * math.MaxFloat32 }),
	}
	for name, x := range inputs {
		for _, typ := range quantTypes {
			y := roundTrip(t, typ, x)
			if name == "max-float" {
				continue // beyond every scale's range: only "no panic" is promised
			}
			for i := range y {
				if math.IsNaN(float64(y[i])) || math.IsInf(float64(y[i]), 0) {
					t.Fatalf("%s/%s: value %d came back as %g", name, typ, i, y[i])
				}
			}
			switch name {
			case "zeros":
				for i := range y {
					if y[i] != 0 {
						t.Fatalf("zeros/%s: value %d = %g", typ, i, y[i])
					}
				}
			case "denormals":
				for i := range y {
					if math.Abs(float64(y[i])) > 1e-40 {
						t.Fatalf("denormals/%s: value %d = %g", typ, i, y[i])
					}
				}
			case "equal", "huge":
				if e := numcmp.RelRMSE(x, y); e > 0.5 {
					t.Errorf("%s/%s: relative RMSE %.3f", name, typ, e)
				}
			}
		}
	}
}

func fill(n int, f func(int) float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = f(i)
	}
	return x
}

func TestQuantizeRejectsNonFinite(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, typ := range quantTypes {
			x := make([]float32, 256)
			x[77] = bad
			b := make([]byte, typ.TypeSize()*256/typ.BlockSize())
			err := Quantize(typ, x, b)
			if err == nil || !strings.Contains(err.Error(), "value 77") {
				t.Errorf("Quantize(%s) with %g at 77 = %v, want error naming value 77", typ, bad, err)
			}
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	if err := Quantize(IQ2_XXS, make([]float32, 256), make([]byte, 66)); err == nil || !strings.Contains(err.Error(), "no reference quantizer") {
		t.Errorf("IQ2_XXS: %v", err)
	}
	if err := Quantize(Q8_0, make([]float32, 32), make([]byte, 33)); err == nil || !strings.Contains(err.Error(), "takes 34 bytes, got 33") {
		t.Errorf("short dst: %v", err)
	}
	if CanQuantize(IQ4_NL) || !CanQuantize(Q6_K) {
		t.Error("CanQuantize wrong")
	}
}

func TestNearestInt(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want int32
	}{{0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {-1.5, -2}, {-2.49, -2}, {4194303, 4194303}, {-4194303, -4194303}, {0.49999997, 0}} {
		if got := nearestInt(c.f); got != c.want {
			t.Errorf("nearestInt(%g) = %d, want %d", c.f, got, c.want)
		}
	}
}
