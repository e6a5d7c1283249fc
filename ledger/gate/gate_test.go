package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/naive"
)

// TestNaivePassesAtTailShapes gates every naive variant at the odd shapes
// (the real shapes are left to `ledger gate`: they take seconds each).
func TestNaivePassesAtTailShapes(t *testing.T) {
	results, err := Run(ledger.Default, Options{Variants: []string{"naive"}, Shapes: TailShapes, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < len(ledger.Catalogue())*3 {
		t.Fatalf("only %d results", len(results))
	}
	for _, r := range results {
		if r.Outcome != Pass {
			t.Errorf("%v", r)
		}
	}
}

// broken builds variants of matvec/q4_k that each get one thing wrong.
func broken() map[string]ledger.MatVec {
	good := naive.MatVec(quant.Q4_K)
	return map[string]ledger.MatVec{
		"off-by-one-row": func(dst []float32, w, xq []byte, k int) {
			good(dst, w, xq, k)
			if len(dst) > 1 {
				dst[len(dst)-1] = dst[0]
			}
		},
		"scaled": func(dst []float32, w, xq []byte, k int) {
			good(dst, w, xq, k)
			for i := range dst {
				dst[i] *= 1.01
			}
		},
		"overrun": func(dst []float32, w, xq []byte, k int) {
			good(dst, w, xq, k)
			dst[:cap(dst)][len(dst)] = 1
		},
		"nan": func(dst []float32, w, xq []byte, k int) {
			good(dst, w, xq, k)
			dst[0] = float32(math.NaN())
		},
		"lazy": func(dst []float32, w, xq []byte, k int) {
			good(dst[:len(dst)/2], w, xq, k)
		},
		"scribbler": func(dst []float32, w, xq []byte, k int) {
			good(dst, w, xq, k)
			xq[5]++
		},
		"panicker": func(dst []float32, w, xq []byte, k int) { panic("boom") },
	}
}

func TestBrokenVariantsFail(t *testing.T) {
	op, _ := ledger.LookupOp("matvec/q4_k")
	shape := ledger.Shape{Rows: 7, K: 512}
	c, err := NewCase(op, shape, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"off-by-one-row": "NMSE", "scaled": "NMSE", "nan": "NaN", "lazy": "unwritten",
		"scribbler": "modified its input", "panicker": "panicked: boom",
	}
	for name, f := range broken() {
		if c.Dirty() {
			if c, err = NewCase(op, shape, 1); err != nil {
				t.Fatal(err)
			}
		}
		_, err := c.Check(ledger.Variant{Op: op.Name, Name: name, Impl: f})
		if name == "overrun" {
			// The gate hands out a slice capped at its length, so Go code
			// cannot reach the guards; only assembly can.
			if err == nil || !strings.Contains(err.Error(), "index out of range") {
				t.Errorf("%s: %v, want a caught out-of-range panic", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: err = %v, want one mentioning %q", name, err, want[name])
		}
	}
	if c.Dirty() {
		if c, err = NewCase(op, shape, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Check(ledger.Variant{Op: op.Name, Name: "naive", Impl: naive.MatVec(quant.Q4_K)}); err != nil {
		t.Errorf("naive: %v", err)
	}
}

func TestGuardsCatchOverrun(t *testing.T) {
	buf := make([]float32, 10+2*guardFloats)
	for i := range buf {
		buf[i] = guardValue
	}
	buf[guardFloats+10] = 0
	if err := checkGuardFloats(buf, 10); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("overrun: %v", err)
	}
	buf[guardFloats+10] = guardValue
	buf[guardFloats-1] = 0
	if err := checkGuardFloats(buf, 10); err == nil || !strings.Contains(err.Error(), "before") {
		t.Errorf("underrun: %v", err)
	}
}

// A naive quantizer with its output spoiled must be refused, the error
// naming what is wrong: q8_k's block sums, a quant two steps off, an f16
// value off by one unit in the last place (truncated, not rounded to even).
func TestBrokenQuantizersFail(t *testing.T) {
	for _, tc := range []struct {
		what, op string
		shape    ledger.Shape
		seed     uint64
		quantize func(dst []byte, x []float32)
		spoil    func(dst []byte)
		want     string
	}{
		{"bad bsums", "quantize/q8_k", ledger.Shape{K: 768}, 2, naive.QuantizeQ8K, func(dst []byte) { dst[260]++ }, "bsums"},
		{"quant two steps off", "quantize/q8_k", ledger.Shape{K: 768}, 2, naive.QuantizeQ8K, func(dst []byte) { dst[4+3] += 2 }, "step"},
		{"f16 off by an ulp", "quantize/f16", ledger.Shape{K: 33}, 4, naive.QuantizeF16, func(dst []byte) { dst[2*5] ^= 1 }, "value 5"},
	} {
		op, _ := ledger.LookupOp(tc.op)
		c, err := NewCase(op, tc.shape, tc.seed)
		if err != nil {
			t.Fatal(err)
		}
		bad := func(dst []byte, x []float32) {
			tc.quantize(dst, x)
			tc.spoil(dst)
		}
		if _, err := c.Check(ledger.Variant{Op: op.Name, Name: "bad", Impl: ledger.Quantize(bad)}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.what, err)
		}
	}
}

func TestCompare(t *testing.T) {
	m := Compare([]float32{1, 2}, []float64{1, 2})
	if m.NMSE != 0 || m.MaxAbs != 0 || m.Cosine != 1 {
		t.Errorf("identical: %+v", m)
	}
	m = Compare([]float32{0, 0}, []float64{0, 0})
	if err := For(&ledger.Op{Kind: ledger.KindRMSNorm}).Within(m); err != nil {
		t.Errorf("zeros: %v", err)
	}
	m = Compare([]float32{1}, []float64{0})
	if err := For(&ledger.Op{Kind: ledger.KindRMSNorm}).Within(m); err == nil {
		t.Error("nonzero against zero reference passed")
	}
}

// TestGGMLCrossCheck: with the pinned llama.cpp installed, matvec and
// dequantize are also compared with ggml's vec_dot and to_float.
func TestGGMLCrossCheck(t *testing.T) {
	if st := GGMLStatus(); st != "on" {
		t.Skip("ggml cross-check " + st)
	}
	for _, tc := range []struct {
		op    string
		shape ledger.Shape
	}{
		{"matvec/q4_k", ledger.Shape{Rows: 7, K: 512}},
		{"matvec/q6_k", ledger.Shape{Rows: 3, K: 256}},
		{"matvec/q8_0", ledger.Shape{Rows: 5, K: 96}},
		{"matvec/f16", ledger.Shape{Rows: 3, K: 33}},
		{"matmul/q4_0", ledger.Shape{Rows: 3, K: 64, N: 2}},
		{"dequantize/q4_k", ledger.Shape{K: 512}},
	} {
		op, _ := ledger.LookupOp(tc.op)
		c, err := NewCase(op, tc.shape, 3)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := ledger.Lookup(tc.op, "naive")
		m, err := c.Check(v)
		if err != nil {
			t.Errorf("%s: %v", tc.op, err)
			continue
		}
		if m.GGML == nil || m.GGML.Checked != m.Checked || m.GGML.NMSE > 1e-9 {
			t.Errorf("%s: ggml metrics %+v", tc.op, m.GGML)
		}
	}
}

// TestBrokenAttentionBatchFails: a batch kernel that lets tokens see the
// future, or writes between the output rows, is caught.
func TestBrokenAttentionBatchFails(t *testing.T) {
	op, _ := ledger.LookupOp(ledger.OpAttentionBatch)
	shape := ledger.Shape{Heads: 4, KVHeads: 2, HeadDim: 8, N: 5, Pos0: 3}
	for name, tc := range map[string]struct {
		f    ledger.AttentionBatch
		want string
	}{
		"acausal": {func(out, q []float32, ld int, k, v []float32, n, h, kv, d, pos0 int, scale float32) {
			for j := range n { // every token sees the whole batch
				naive.Attention(out[j*ld:j*ld+h*d], q[j*ld:j*ld+h*d], k, v, h, kv, d, pos0+n, scale)
			}
		}, "NMSE"},
		"gap-writer": {func(out, q []float32, ld int, k, v []float32, n, h, kv, d, pos0 int, scale float32) {
			naive.AttentionBatch(out, q, ld, k, v, n, h, kv, d, pos0, scale)
			out[h*d] = 0
		}, "gap"},
		"dense": {func(out, q []float32, ld int, k, v []float32, n, h, kv, d, pos0 int, scale float32) {
			naive.AttentionBatch(out, q, h*d, k, v, n, h, kv, d, pos0, scale) // ignores ld
		}, "gap"},
	} {
		c, err := NewCase(op, shape, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Check(ledger.Variant{Op: op.Name, Name: name, Impl: tc.f}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", name, err, tc.want)
		}
	}
}

// TestForVariantBF16: a bf16 variant gets the looser class, never a
// tighter one than its op's.
func TestForVariantBF16(t *testing.T) {
	for _, op := range ledger.Catalogue() {
		plain := For(op)
		if got := ForVariant(op, ledger.Variant{}); got != plain {
			t.Errorf("%s: plain variant %+v, want %+v", op.Name, got, plain)
		}
		b := ForVariant(op, ledger.Variant{Precision: ledger.PrecisionBF16})
		if b.NMSE < plain.NMSE || b.MaxAbs < plain.MaxAbs || b.Cosine > plain.Cosine || b.NMSE > max(plain.NMSE, 1e-4) {
			t.Errorf("%s: bf16 class %+v against %+v", op.Name, b, plain)
		}
	}
}

// TestPreparedFormMustMatch: a matmul variant's prepared form passes only
// when it gives its MatMul's output bit for bit, whatever the ranges.
func TestPreparedFormMustMatch(t *testing.T) {
	op, _ := ledger.LookupOp("matmul/q4_k")
	shape := ledger.Shape{Rows: 37, K: 512, N: 5}
	mm := naive.MatMul(quant.Q4_K)
	rowBytes, _ := quant.RowSize(quant.Q8_K, 512)
	copied := func(prep, xq []byte, j0, j1, n, k int) {
		copy(prep[j0*int(rowBytes):j1*int(rowBytes)], xq[j0*int(rowBytes):])
	}
	form := func(prepare func(prep, xq []byte, j0, j1, n, k int), run ledger.MatMul) *ledger.PreparedMatMul {
		return &ledger.PreparedMatMul{Align: 2, Size: func(n, k int) int { return n * int(rowBytes) }, Prepare: prepare,
			Run: func(dst []float32, ldd int, w []byte, rows int, prep []byte, n, k int) {
				run(dst, ldd, w, rows, prep, n, k)
			}}
	}
	for _, c := range []struct {
		name string
		p    *ledger.PreparedMatMul
		want string // "" passes
	}{
		{"faithful", form(copied, mm), ""},
		{"first-range-only", form(func(prep, xq []byte, j0, j1, n, k int) {
			if j0 == 0 {
				copied(prep, xq, j0, j1, n, k)
			}
		}, mm), "prepared form: output"},
		{"one-ulp-off", form(copied, func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
			mm(dst, ldd, w, rows, xq, n, k)
			dst[0] = math.Nextafter32(dst[0], 0)
		}), "prepared form: output"},
		{"panicker", form(copied, func([]float32, int, []byte, int, []byte, int, int) { panic("boom") }), "prepared form: panicked: boom"},
	} {
		cs, err := NewCase(op, shape, 1)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.Check(ledger.Variant{Op: op.Name, Name: c.name, Impl: mm, Prepared: c.p})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func TestFamilySelection(t *testing.T) {
	reg := ledger.NewRegistry()
	for _, v := range []ledger.Variant{
		{Op: ledger.OpRMSNorm, Name: "a", Family: ledger.FamilyNaive, Impl: ledger.RMSNorm(naive.RMSNorm)},
		{Op: ledger.OpRMSNorm, Name: "b", Family: ledger.FamilyCUDA, Impl: ledger.RMSNorm(naive.RMSNorm)},
	} {
		if err := reg.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Run(reg, Options{Families: []string{"cuda"}, Shapes: TailShapes, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 {
		t.Fatal("no results for family cuda")
	}
	for _, r := range res {
		if r.Variant != "b" || r.Family != "cuda" {
			t.Fatalf("family cuda selected %v", r)
		}
	}
}

// ShapesFromEnv takes the default where the variable is unset or empty,
// else its value as ParseShapes reads it, naming the variable on an error.
func TestShapesFromEnv(t *testing.T) {
	const env = "DAMASCUS_TEST_GATE_SHAPES"
	for _, c := range []struct {
		value, want, err string
	}{
		{"", "1B", ""},
		{"ALL", string(AllShapes), ""},
		{"3b", "3B", ""},
		{"7B", "", env + `: shapes "7B": want tails, real, 1B, 3B or all`},
	} {
		t.Setenv(env, c.value)
		got, err := ShapesFromEnv(env, Shapes("1B"))
		if string(got) != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%s=%q: %q, %v; want %q, %q", env, c.value, got, err, c.want, c.err)
		}
	}
}

// TestWeightLayout: a variant with a weight layout is gated on the weights
// repacked into it and held to the stored weights' reference. The toy
// layout reverses the rows within groups of 4 (the last group padded); a
// kernel that reads it passes, the same kernel reading rows in stored
// order fails, and Register refuses a layout of another weight type.
func TestWeightLayout(t *testing.T) {
	op, _ := ledger.LookupOp("matvec/q4_k")
	const g = 4
	rowBytes := func(k int) int { n, _ := quant.RowSize(quant.Q4_K, int64(k)); return int(n) }
	pos := func(i int) int { return i/g*g + g - 1 - i%g } // a row's place in the layout, and back
	lay := &ledger.WeightLayout{Name: "q4_k-rev4", Weights: quant.Q4_K, Rows: g,
		GroupBytes: func(k int) int { return g * rowBytes(k) },
		Repack: func(dst, src []byte, rows, k int) error {
			rb := rowBytes(k)
			clear(dst)
			for i := range rows {
				copy(dst[pos(i)*rb:][:rb], src[i*rb:][:rb])
			}
			return nil
		},
		ActBytes: func(k int) int { return k / quant.QK_K * 292 },
		Prepare:  func(dst, xq []byte, k int) { copy(dst, xq) }}
	mv := naive.MatVec(quant.Q4_K)
	kernel := func(reads func(int) int) ledger.MatVec {
		return func(dst []float32, w, xr []byte, k int) {
			rb := rowBytes(k)
			for i := range dst {
				p := reads(i)
				mv(dst[i:i+1], w[p*rb:][:rb], xr, k)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		reads func(int) int
		ok    bool
	}{{"reads-layout", pos, true}, {"reads-stored-order", func(i int) int { return i }, false}} {
		c, err := NewCase(op, ledger.Shape{Rows: 7, K: 512}, 1)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Check(ledger.Variant{Op: op.Name, Name: tc.name, Impl: kernel(tc.reads), Layout: lay})
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want pass %v", tc.name, err, tc.ok)
		}
	}
	r := ledger.NewRegistry()
	err := r.Add(ledger.Variant{Op: "matvec/q6_k", Name: "x", Family: ledger.FamilyNaive, Impl: naive.MatVec(quant.Q6_K), Layout: lay})
	if err == nil || !strings.Contains(err.Error(), "the op's weight type") {
		t.Errorf("a Q4_K layout on a Q6_K op: %v", err)
	}
}
