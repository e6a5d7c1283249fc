//go:build !noasm

package avx512

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/quant"
)

// r16Kernel is one type's interleaved kernel set as the tests drive it.
type r16Kernel struct {
	wt           quant.Type
	bs, gb, ab   int // stored block, interleaved group block, activations per super-block
	quantize     func(dst []byte, src []float32)
	repack       func(dst, src []byte, rows, k int) error
	prepare      func(dst, xq []byte, k int)
	matvec       func(dst []float32, w, xr []byte, k, dist int)
	rows, k      int
	seed1, seed2 uint64
}

// The interleaved kernels over repacked rows give each row's dot product
// with Q8_K activations, as the float64 dot of the dequantized row and
// activations does (to float32 rounding of the sums), with and without
// prefetches; groups of rows and super-blocks land in order; shapes the
// interleave cannot take are refused. The rows change sign and size along
// k, so scales (and Q6_K's signed ones) vary over the sub-blocks.
func TestR16MatVec(t *testing.T) {
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	for _, c := range []r16Kernel{
		{quant.Q4_K, 144, Q4KR16Bytes, Q4KR16ActBytes, quant.QuantizeQ4K, RepackQ4KR16, PrepareQ4KR16, Q4KR16MatVec, 48, 768, 3, 4},
		{quant.Q6_K, 210, Q6KR16Bytes, Q6KR16ActBytes, quant.QuantizeQ6K, RepackQ6KR16, PrepareQ6KR16, Q6KR16MatVec, 32, 512, 5, 6},
	} {
		r := rand.New(rand.NewPCG(c.seed1, c.seed2))
		rows, k := c.rows, c.k
		w := make([]float32, rows*k)
		for i := range w {
			w[i] = float32(r.NormFloat64()) * float32(1+i%k/64)
		}
		q := make([]byte, rows*k/256*c.bs)
		c.quantize(q, w)
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		xq := make([]byte, k/256*292)
		quant.QuantizeQ8K(xq, x)
		packed := make([]byte, rows/Q4KR16Rows*k/256*c.gb)
		if err := c.repack(packed, q, rows, k); err != nil {
			t.Fatal(err)
		}
		xr := make([]byte, k/256*c.ab)
		c.prepare(xr, xq, k)
		for _, dist := range []int{0, 4096} {
			got := make([]float32, rows)
			c.matvec(got, packed, xr, k, dist)
			checkR16(t, c.wt, got, q, xq, rows, k)
		}
		// A k off the super-block, a destination one byte short, a source
		// one row short: errors (a partial last group is padded, and the
		// ledger variants' tails are the gate's and the suite's).
		for _, bad := range []struct {
			dst, src []byte
			rows, k  int
		}{{packed, q, 16, 100}, {packed[:len(packed)-1], q, rows, k}, {packed, q[:len(q)-c.bs*k/256], rows, k}} {
			if err := c.repack(bad.dst, bad.src, bad.rows, bad.k); err == nil {
				t.Errorf("%s: repack of %d rows, k %d, dst %d bytes, src %d: no error", c.wt, bad.rows, bad.k, len(bad.dst), len(bad.src))
			}
		}
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
