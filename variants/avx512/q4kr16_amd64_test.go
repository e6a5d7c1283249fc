//go:build !noasm

package avx512

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/quant"
)

// The interleaved kernel over repacked rows gives each row's dot product
// with Q8_K activations, as the float64 dot of the dequantized row and
// activations does (to float32 rounding of the sums); groups of rows and
// super-blocks land in order.
func TestQ4KR16MatVec(t *testing.T) {
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const rows, k = 48, 768
	w := make([]float32, rows*k)
	for i := range w {
		w[i] = float32(r.NormFloat64()) * (1 + float32(i%k)/float32(k)) // scales vary over the sub-blocks
	}
	q := make([]byte, rows*k/256*144)
	quant.QuantizeQ4K(q, w)
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	xq := make([]byte, k/256*292)
	quant.QuantizeQ8K(xq, x)

	packed := make([]byte, rows/Q4KR16Rows*k/256*Q4KR16Bytes)
	if err := RepackQ4KR16(packed, q, rows, k); err != nil {
		t.Fatal(err)
	}
	xr := make([]byte, k/256*Q4KR16ActBytes)
	PrepareQ4KR16(xr, xq, k)
	for _, dist := range []int{0, 4096} {
		got := make([]float32, rows)
		Q4KR16MatVec(got, packed, xr, k, dist)
		checkR16(t, quant.Q4_K, got, q, xq, rows, k)
	}
	for _, c := range []struct{ rows, k int }{{15, 256}, {16, 100}, {17, 512}} {
		if err := RepackQ4KR16(packed, q, c.rows, c.k); err == nil {
			t.Errorf("RepackQ4KR16(%d rows, k %d): no error", c.rows, c.k)
		}
	}
}

// The Q6_K twin likewise, scales of both signs (QuantizeQ6K of rows that
// change sign and size along k).
func TestQ6KR16MatVec(t *testing.T) {
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	r := rand.New(rand.NewPCG(5, 6))
	const rows, k = 32, 512
	w := make([]float32, rows*k)
	for i := range w {
		w[i] = float32(r.NormFloat64()) * float32(1+i%k/64)
	}
	q := make([]byte, rows*k/256*210)
	quant.QuantizeQ6K(q, w)
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	xq := make([]byte, k/256*292)
	quant.QuantizeQ8K(xq, x)
	packed := make([]byte, rows/Q4KR16Rows*k/256*Q6KR16Bytes)
	if err := RepackQ6KR16(packed, q, rows, k); err != nil {
		t.Fatal(err)
	}
	xr := make([]byte, k/256*Q6KR16ActBytes)
	PrepareQ6KR16(xr, xq, k)
	for _, dist := range []int{0, 4096} {
		got := make([]float32, rows)
		Q6KR16MatVec(got, packed, xr, k, dist)
		checkR16(t, quant.Q6_K, got, q, xq, rows, k)
	}
	if err := RepackQ6KR16(packed, q, 17, k); err == nil {
		t.Error("RepackQ6KR16 of 17 rows: no error")
	}
}

// checkR16 compares the kernel's rows with float64 dots of the dequantized
// rows (q, of type wt) and activations (xq, Q8_K).
func checkR16(t *testing.T, wt quant.Type, got []float32, q, xq []byte, rows, k int) {
	t.Helper()

	wd := make([]float32, rows*k)
	if err := quant.Dequantize(wt, q, wd); err != nil {
		t.Fatal(err)
	}
	xd := make([]float32, k)
	if err := quant.Dequantize(quant.Q8_K, xq, xd); err != nil {
		t.Fatal(err)
	}
	for row := range rows {
		var want, mag float64
		for i := range k {
			p := float64(wd[row*k+i]) * float64(xd[i])
			want += p
			mag += math.Abs(p)
		}
		if d := math.Abs(float64(got[row]) - want); d > 1e-5*mag {
			t.Errorf("row %d: %v, want %v (|diff| %g, scale %g)", row, got[row], want, d, mag)
		}
	}
}
