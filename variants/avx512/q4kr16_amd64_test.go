//go:build !noasm

package avx512

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
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
		q := quantizedRows(r, c.quantize, c.bs, rows, k)
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

// The Q4_K r16 matvec variants with other lines or schedules (lighter
// lines, activation prefetch, two streams, k blocks) give
// avx512-vnni-r16's results bit for bit (prefetches change no result): the same integer sums, the same
// float accumulation order. Odd and even group counts, one group, a
// partial last group, and rows long enough that a group outgrows L1.
func TestR16VariantsBitwise(t *testing.T) {
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	for _, c := range []struct {
		op       string
		lay      *ledger.WeightLayout
		quantize func(dst []byte, x []float32)
		bs, want int // stored block bytes; variants besides the plain one
	}{
		{"matvec/q4_k", Q4KR16Layout, quant.QuantizeQ4K, 144, 15}, // -h, -hm, -hmx, -hmx-c2, -hmx-y, -hmx-pf4k, -hmx-l2pf8k/16k/32k, -hmx-nta4k/8k/16k, -2s, -2s-nta8k, -hm-kc8
		{"matvec/q6_k", Q6KR16Layout, quant.QuantizeQ6K, 210, 7},  // -x, -l2pf8k/16k/32k, -nta4k/8k/16k
	} {
		ref, _ := ledger.Lookup(c.op, "avx512-vnni-r16")
		var others []ledger.Variant
		for _, v := range ledger.Variants(c.op) {
			if v.Layout == c.lay && strings.HasPrefix(v.Name, "avx512-vnni-r16-") && (!strings.Contains(v.Name, "-pf") || strings.HasPrefix(v.Name, "avx512-vnni-r16-hmx-")) {
				others = append(others, v)
			}
		}
		if len(others) != c.want {
			t.Fatalf("%s: found %d r16 matvec variants besides the plain one, want %d", c.op, len(others), c.want)
		}
		r := rand.New(rand.NewPCG(7, 8))
		for _, sh := range []struct{ rows, k int }{{16, 256}, {48, 768}, {80, 8192}, {45, 2048}} {
			q := quantizedRows(r, c.quantize, c.bs, sh.rows, sh.k)
			x := make([]float32, sh.k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			xq := make([]byte, sh.k/256*292)
			quant.QuantizeQ8K(xq, x)
			packed := make([]byte, c.lay.Size(sh.rows, sh.k))
			if err := c.lay.Repack(packed, q, sh.rows, sh.k); err != nil {
				t.Fatal(err)
			}
			xr := make([]byte, c.lay.ActBytes(sh.k))
			c.lay.Prepare(xr, xq, sh.k)
			want := make([]float32, sh.rows)
			ref.Impl.(ledger.MatVec)(want, packed, xr, sh.k)
			for _, v := range others {
				got := make([]float32, sh.rows)
				v.Impl.(ledger.MatVec)(got, packed, xr, sh.k)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("%s:%s at %dx%d: row %d = %v, avx512-vnni-r16 gives %v", c.op, v.Name, sh.rows, sh.k, i, got[i], want[i])
						break
					}
				}
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

// Q4KR16MatMul and Q6KR16MatMul give every token exactly the single-token
// kernel's bits, for token counts around the four-token pass, output rows
// ldd apart with the values between rows left untouched, and hold the
// float64 dot.
func TestQ4KR16MatMul(t *testing.T) {
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		t.Skipf("CPU lacks %v", missing)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		r16Kernel
		matmul func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int)
	}{
		{r16Kernel{wt: quant.Q4_K, bs: 144, gb: Q4KR16Bytes, ab: Q4KR16ActBytes, quantize: quant.QuantizeQ4K, repack: RepackQ4KR16, prepare: PrepareQ4KR16, matvec: Q4KR16MatVec}, Q4KR16MatMul},
		{r16Kernel{wt: quant.Q6_K, bs: 210, gb: Q6KR16Bytes, ab: Q6KR16ActBytes, quantize: quant.QuantizeQ6K, repack: RepackQ6KR16, prepare: PrepareQ6KR16, matvec: Q6KR16MatVec}, Q6KR16MatMul},
		// Row blocks of one group, and of three (a last block short).
		{r16Kernel{wt: quant.Q4_K, bs: 144, gb: Q4KR16Bytes, ab: Q4KR16ActBytes, quantize: quant.QuantizeQ4K, repack: RepackQ4KR16, prepare: PrepareQ4KR16, matvec: Q4KR16MatVec},
			func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
				Q4KR16MatMulRB(dst, ldd, w, rows, xr, n, k, 1)
			}},
		{r16Kernel{wt: quant.Q4_K, bs: 144, gb: Q4KR16Bytes, ab: Q4KR16ActBytes, quantize: quant.QuantizeQ4K, repack: RepackQ4KR16, prepare: PrepareQ4KR16, matvec: Q4KR16MatVec},
			func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
				Q4KR16MatMulRB(dst, ldd, w, rows, xr, n, k, 3*k/256*Q4KR16Bytes)
			}},
		{r16Kernel{wt: quant.Q6_K, bs: 210, gb: Q6KR16Bytes, ab: Q6KR16ActBytes, quantize: quant.QuantizeQ6K, repack: RepackQ6KR16, prepare: PrepareQ6KR16, matvec: Q6KR16MatVec},
			func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
				Q6KR16MatMulRB(dst, ldd, w, rows, xr, n, k, 3*k/256*Q6KR16Bytes)
			}},
	} {
		for _, sh := range []struct{ rows, k int }{{16, 256}, {48, 768}, {32, 3072}, {768, 256}, {256, 768}, {4096, 256}, {112, 512}} {
			rows, k := sh.rows, sh.k
			q := quantizedRows(r, c.quantize, c.bs, rows, k)
			packed := make([]byte, rows/16*k/256*c.gb)
			if err := c.repack(packed, q, rows, k); err != nil {
				t.Fatal(err)
			}
			const maxN = 9
			act := k / 256 * c.ab
			xqs := make([][]byte, maxN)
			xr := make([]byte, maxN*act)
			for j := range maxN {
				x := make([]float32, k)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				xqs[j] = make([]byte, k/256*292)
				quant.QuantizeQ8K(xqs[j], x)
				c.prepare(xr[j*act:], xqs[j], k)
			}
			for n := 1; n <= maxN; n++ {
				ldd := rows + 5
				dst := make([]float32, n*ldd)
				for i := range dst {
					dst[i] = -7
				}
				before := append([]byte(nil), xr...)
				c.matmul(dst, ldd, packed, rows, xr, n, k)
				if !bytes.Equal(before, xr) {
					t.Fatalf("%s rows %d k %d n %d: the kernel wrote into its activations", c.wt, rows, k, n)
				}
				for j := range n {
					want := make([]float32, rows)
					c.matvec(want, packed, xr[j*act:], k, 0)
					for i := range rows {
						if math.Float32bits(dst[j*ldd+i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s rows %d k %d n %d: token %d row %d: %g, single-token kernel %g", c.wt, rows, k, n, j, i, dst[j*ldd+i], want[i])
						}
					}
					for i := rows; i < ldd && j*ldd+i < len(dst); i++ {
						if dst[j*ldd+i] != -7 {
							t.Fatalf("%s rows %d k %d n %d: token %d wrote past its rows (index %d)", c.wt, rows, k, n, j, i)
						}
					}
					if n == maxN {
						checkR16(t, c.wt, dst[j*ldd:j*ldd+rows], q, xqs[j], rows, k)
					}
				}
			}
		}
	}
}

// BenchmarkQ4KBatch times n tokens' products with one 8192×3072 Q4_K
// matrix (the 3B's gate/up shape, 14 MiB: out of L2) through the
// interleaved four-token kernel (whole, and row-blocked) and through the shipped batched decode
// kernel (matvec_batch/q4_k:avx512-vnni-pf2k over the stored rows), both
// single-threaded; GB/s counts the stored weights once per call.
func BenchmarkQ4KBatch(b *testing.B) {
	if missing := cpufeat.Missing("avx512f", "avx512bw", "avx512vnni"); len(missing) > 0 {
		b.Skipf("CPU lacks %v", missing)
	}
	const rows, k = 8192, 3072
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, rows*k)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	q := make([]byte, rows*k/256*144)
	quant.QuantizeQ4K(q, w)
	packed := make([]byte, rows/16*k/256*Q4KR16Bytes)
	if err := RepackQ4KR16(packed, q, rows, k); err != nil {
		b.Fatal(err)
	}
	shipped, ok := ledger.Default.Lookup(ledger.MatVecBatchOp(quant.Q4_K), "avx512-vnni-pf2k")
	if !ok {
		b.Fatal("matvec_batch/q4_k:avx512-vnni-pf2k is not registered")
	}
	mm := shipped.Impl.(ledger.MatMul)
	for _, n := range []int{1, 4, 8, 16} {
		xq := make([]byte, n*k/256*292)
		x := make([]float32, n*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		quant.QuantizeQ8K(xq, x)
		act := k / 256 * Q4KR16ActBytes
		xr := make([]byte, n*act)
		for j := range n {
			PrepareQ4KR16(xr[j*act:], xq[j*k/256*292:], k)
		}
		dst := make([]float32, n*rows)
		for _, v := range []struct {
			name string
			f    func()
		}{
			{"r16-m4", func() { Q4KR16MatMul(dst, rows, packed, rows, xr, n, k) }},
			{"r16-f8", func() { Q4KR16MatMulF(dst, rows, packed, rows, xr, n, k) }},
			{"r16-m4-rb32k", func() { Q4KR16MatMulRB(dst, rows, packed, rows, xr, n, k, 32<<10) }},
			{"r16-m4-rb256k", func() { Q4KR16MatMulRB(dst, rows, packed, rows, xr, n, k, 256<<10) }},
			{"shipped-pf2k", func() { mm(dst, rows, q, rows, xq, n, k) }},
		} {
			b.Run("variant="+v.name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(int64(len(q)))
				for b.Loop() {
					v.f()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

// The layouts' row expansion (a token embedding placed in the layout)
// gives quant.Dequantize's values of the stored row, bit for bit, at every
// row of a partial last group too.
func TestDequantizeRowR16(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		wt       quant.Type
		bs       int
		lay      *ledger.WeightLayout
		quantize func(dst []byte, src []float32)
	}{
		{quant.Q4_K, 144, Q4KR16Layout, quant.QuantizeQ4K},
		{quant.Q6_K, 210, Q6KR16Layout, quant.QuantizeQ6K},
	} {
		const rows, k = 37, 512
		q := quantizedRows(r, c.quantize, c.bs, rows, k)
		lw := make([]byte, c.lay.Size(rows, k))
		if err := c.lay.Repack(lw, q, rows, k); err != nil {
			t.Fatal(err)
		}
		want, got := make([]float32, k), make([]float32, k)
		for row := range rows {
			if err := quant.Dequantize(c.wt, q[row*k/256*c.bs:(row+1)*k/256*c.bs], want); err != nil {
				t.Fatal(err)
			}
			c.lay.DequantizeRow(got, lw, row, k)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s row %d value %d: %g, stored row %g", c.wt, row, i, got[i], want[i])
				}
			}
		}
	}
}

// quantizedRows is rows rows of k values quantized by quantize (bs bytes a
// block): normal values growing along k, so scales vary over the
// sub-blocks.
func quantizedRows(r *rand.Rand, quantize func(dst []byte, src []float32), bs, rows, k int) []byte {
	w := make([]float32, rows*k)
	for i := range w {
		w[i] = float32(r.NormFloat64()) * float32(1+i%k/64)
	}
	q := make([]byte, rows*k/256*bs)
	quantize(q, w)
	return q
}
