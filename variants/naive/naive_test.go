package naive

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// randomWeights returns rows×k random weights of type t: random quant bytes
// with the block scales set to finite, moderate values.
func randomWeights(rng *rand.Rand, t quant.Type, rows, k int) []byte {
	n := rows * k / t.BlockSize()
	b := make([]byte, n*t.TypeSize())
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	h := func(off int, v float32) { binary.LittleEndian.PutUint16(b[off:], quant.Float32ToFP16(v)) }
	for i := range n {
		o := i * t.TypeSize()
		switch t {
		case quant.Q4_K, quant.Q5_K:
			h(o, rng.Float32()*0.01)
			h(o+2, rng.Float32()*0.01)
		case quant.Q6_K:
			h(o+208, rng.Float32()*0.01)
		case quant.Q8_0, quant.Q4_0:
			h(o, rng.Float32()*0.02)
		case quant.F16:
			h(o, float32(rng.NormFloat64()))
		case quant.BF16:
			binary.LittleEndian.PutUint16(b[o:], quant.Float32ToBF16(float32(rng.NormFloat64())))
		case quant.F32:
			binary.LittleEndian.PutUint32(b[o:], math.Float32bits(float32(rng.NormFloat64())))
		}
	}
	return b
}

func randomFloats(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func quantizeActs(t *testing.T, at quant.Type, x []float32) []byte {
	sz, _ := quant.RowSize(at, int64(len(x)))
	xq := make([]byte, sz)
	if err := quant.Quantize(at, x, xq); err != nil {
		t.Fatal(err)
	}
	return xq
}

// TestMatVecMatchesDequantizedDot checks each weight type's dot product
// against float64 sums of quant's dequantized values.
func TestMatVecMatchesDequantizedDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, wt := range ledger.WeightTypes {
		at := ledger.ActivationType(wt)
		const rows = 5
		k := 3 * max(wt.BlockSize(), 32)
		w := randomWeights(rng, wt, rows, k)
		xq := quantizeActs(t, at, randomFloats(rng, k))
		xd := make([]float32, k)
		if err := quant.Dequantize(at, xq, xd); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, rows)
		MatVec(wt)(got, w, xq, k)
		rb := len(w) / rows
		wd := make([]float32, k)
		for r := range rows {
			if err := quant.Dequantize(wt, w[r*rb:(r+1)*rb], wd); err != nil {
				t.Fatal(err)
			}
			var want, mag float64
			for i := range k {
				want += float64(wd[i]) * float64(xd[i])
				mag += math.Abs(float64(wd[i]) * float64(xd[i]))
			}
			if d := math.Abs(float64(got[r]) - want); d > 1e-5*mag {
				t.Errorf("%s row %d: got %g, want %g (|Σ|=%g)", wt, r, got[r], want, mag)
			}
		}

		// MatMul must agree with MatVec column by column.
		const n = 3
		xs := quantizeActs(t, at, randomFloats(rng, n*k))
		const ldd = rows + 2
		mm := make([]float32, n*ldd)
		MatMul(wt)(mm, ldd, w, rows, xs, n, k)
		xb := len(xs) / n
		for j := range n {
			MatVec(wt)(got, w, xs[j*xb:(j+1)*xb], k)
			for r := range rows {
				if mm[j*ldd+r] != got[r] {
					t.Errorf("%s matmul[%d,%d] = %g, matvec %g", wt, j, r, mm[j*ldd+r], got[r])
				}
			}
		}
	}
}

// TestQuantizeMatchesReference compares byte for byte with quant's
// reference quantizers, on random data and on values that sit on rounding ties.
func TestQuantizeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := [][]float32{randomFloats(rng, 1024), make([]float32, 512)}
	ties := make([]float32, 512)
	for i := range ties {
		ties[i] = float32(i%64-32) * 0.5 // many x/d land on .5
	}
	ties[100] = 16 // the block maximum
	inputs = append(inputs, ties)
	for _, tc := range []struct {
		t  quant.Type
		fn ledger.Quantize
	}{{quant.Q8_K, QuantizeQ8K}, {quant.Q8_0, QuantizeQ8_0}, {quant.F16, QuantizeF16}, {quant.BF16, QuantizeBF16}} {
		for i, x := range inputs {
			want := quantizeActs(t, tc.t, x)
			got := bytes.Repeat([]byte{0xAA}, len(want))
			tc.fn(got, x)
			if !bytes.Equal(got, want) {
				for j := range got {
					if got[j] != want[j] {
						t.Errorf("%s input %d: first difference at byte %d: %#x, want %#x", tc.t, i, j, got[j], want[j])
						break
					}
				}
			}
		}
	}
}

// TestQuantizeQ8KByHand checks ggml's conventions on a block worked out by
// hand: the maximum-magnitude value maps to −127 with d negative, and
// rounding ties go to even.
func TestQuantizeQ8KByHand(t *testing.T) {
	x := make([]float32, quant.QK_K)
	x[0] = 127  // the maximum: iscale = −1, d = −1
	x[1] = 2.5  // −2.5 rounds to −2 (even)
	x[2] = -3.5 // 3.5 rounds to 4 (even)
	x[17] = 1
	y := make([]byte, 292)
	QuantizeQ8K(y, x)
	if d := math.Float32frombits(binary.LittleEndian.Uint32(y)); d != -1 {
		t.Errorf("d = %g, want -1", d)
	}
	qs := y[4:]
	if int8(qs[0]) != -127 || int8(qs[1]) != -2 || int8(qs[2]) != 4 || int8(qs[17]) != -1 {
		t.Errorf("quants %d %d %d %d, want -127 -2 4 -1", int8(qs[0]), int8(qs[1]), int8(qs[2]), int8(qs[17]))
	}
	if s0, s1 := int16(binary.LittleEndian.Uint16(y[260:])), int16(binary.LittleEndian.Uint16(y[262:])); s0 != -125 || s1 != -1 {
		t.Errorf("bsums %d %d, want -125 -1", s0, s1)
	}
}

func TestVectorOps(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	w := []float32{1, 1, 2, 0.5}
	dst := make([]float32, 4)
	RMSNorm(dst, x, w, 0)
	rms := math.Sqrt((1 + 4 + 9 + 16) / 4.0)
	for i := range x {
		if want := float64(x[i]) / rms * float64(w[i]); math.Abs(float64(dst[i])-want) > 1e-6 {
			t.Errorf("rmsnorm[%d] = %g, want %g", i, dst[i], want)
		}
	}
	s := []float32{1, 2, 3}
	Softmax(s)
	e := []float64{math.Exp(1), math.Exp(2), math.Exp(3)}
	for i := range s {
		if want := e[i] / (e[0] + e[1] + e[2]); math.Abs(float64(s[i])-want) > 1e-6 {
			t.Errorf("softmax[%d] = %g, want %g", i, s[i], want)
		}
	}
	SiLUMul(dst[:1], []float32{1}, []float32{2})
	if want := 2 / (1 + math.Exp(-1)); math.Abs(float64(dst[0])-want) > 1e-6 {
		t.Errorf("silu_mul = %g, want %g", dst[0], want)
	}
	r := []float32{1, 0, 0, 1}
	RoPE(r, 1, 4, []float32{0, 1}, []float32{1, 0}, false) // rotate pair 0 by 90°, pair 1 by 0
	if r[0] != 0 || r[1] != 1 || r[2] != 0 || r[3] != 1 {
		t.Errorf("rope = %v, want [0 1 0 1]", r)
	}
	r = []float32{1, 0, 0, 1}
	RoPE(r, 1, 4, []float32{0, 1}, []float32{1, 0}, true) // pairs (0,2) by 90°, (1,3) by 0
	if r[0] != 0 || r[2] != 1 || r[1] != 0 || r[3] != 1 {
		t.Errorf("neox rope = %v, want [0 0 1 1]", r)
	}
}

func TestAttentionAttendsToMatchingKey(t *testing.T) {
	// Two query heads share one kv head; keys are one-hot; a large score
	// makes each query pick the value at the position its query points at.
	q := []float32{10, 0, 0, 10}
	k := []float32{1, 0, 0, 1}
	v := []float32{5, 6, 7, 8}
	out := make([]float32, 4)
	Attention(out, q, k, v, 2, 1, 2, 2, 1)
	if math.Abs(float64(out[0]-5)) > 1e-3 || math.Abs(float64(out[3]-8)) > 1e-3 {
		t.Errorf("attention = %v, want ≈ [5 6 7 8]", out)
	}
}
