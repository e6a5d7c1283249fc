package ledgertest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// MatVecFunc is ledger.MatVec's shape.
type MatVecFunc = func(dst []float32, w, xq []byte, k int)

// ActivationType mirrors ledger.ActivationType for the types tested here.
func ActivationType(wt quant.Type) quant.Type {
	switch wt {
	case quant.Q4_K, quant.Q6_K:
		return quant.Q8_K
	case quant.Q8_0:
		return quant.Q8_0
	}
	return wt
}

// Ks returns the row lengths a matvec of weight type wt is tested at: odd
// block counts and, for plain types, lengths that leave every vector tail.
func Ks(wt quant.Type) []int {
	switch wt {
	case quant.Q4_K, quant.Q6_K:
		return []int{256, 512, 768, 1280, 2048, 3072 + 256}
	case quant.Q8_0:
		return []int{32, 64, 96, 160, 256, 288, 1024 + 32, 3072}
	}
	return []int{1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 1000, 2048}
}

// Rows are the row counts tested: odd counts leave every multi-row tail.
var Rows = []int{1, 2, 3, 4, 5, 7, 8, 9, 13}

// Tolerance is the allowed |got-want| as a fraction of the terms' magnitude.
// The integer paths are exact inside a block; float32 rounding enters once
// per block scale and per accumulation, so the bound grows with the number
// of blocks (or, for float types, of values per SIMD lane).
func Tolerance(wt quant.Type, k int) float64 {
	const eps = 1.0 / (1 << 24)
	switch wt {
	case quant.Q4_K, quant.Q6_K:
		return float64(k/256+8) * 4 * eps
	case quant.Q8_0:
		return float64(k/32+8) * 4 * eps
	}
	return float64(k/8+32) * 2 * eps
}

// weights makes rows×k weights of type wt.
func weights(r *rand.Rand, wt quant.Type, rows, k int, m Mode) []byte {
	switch wt {
	case quant.Q4_K:
		return Q4K(r, rows*k/256, m)
	case quant.Q6_K:
		return Q6K(r, rows*k/256, m)
	case quant.Q8_0:
		return Q8_0(r, rows*k/32, m)
	}
	return Encode(wt, floatsOf(r, rows*k, m, 60000))
}

// floatsOf makes n Gaussian values (Floats) for Random and Mixed, all big
// for MaxScales, all -big for MinValues, all 0 for Zero.
func floatsOf(r *rand.Rand, n int, m Mode, big float32) []float32 {
	x := Floats(r, n)
	switch m {
	case MaxScales:
		for i := range x {
			x[i] = big
		}
	case MinValues:
		for i := range x {
			x[i] = -big
		}
	case Zero:
		clear(x)
	}
	return x
}

func Encode(t quant.Type, x []float32) []byte {
	switch t {
	case quant.F16:
		return BytesF16(x)
	case quant.BF16:
		return BytesBF16(x)
	}
	return BytesF32(x)
}

// activations makes one activation row of k values for weight type wt: raw
// adversarial blocks for the K-quants, otherwise quantized (or encoded)
// Gaussian values.
func activations(r *rand.Rand, wt quant.Type, k int, m Mode) []byte {
	switch ActivationType(wt) {
	case quant.Q8_K:
		if m == Random {
			x := Floats(r, k)
			xq := make([]byte, k/256*Q8KBytes)
			quant.QuantizeQ8K(xq, x)
			return xq
		}
		return Q8K(r, k/256, m)
	case quant.Q8_0:
		x := floatsOf(r, k, m, 1e4) // -1e4 quantizes to -127: activations never hold -128
		xq := make([]byte, k/32*Q80Bytes)
		quant.QuantizeQ8_0(xq, x)
		return xq
	}
	x := Floats(r, k)
	if m == MaxScales {
		for i := range x {
			x[i] = 1000
		}
	}
	return Encode(wt, x)
}

// MatVec checks a matvec kernel for weight type wt against the float64
// reference: every row length of Ks, every Mode (weights and activations
// drawn independently), row counts with tails, misaligned inputs, and guard
// values around the output.
func MatVec(t *testing.T, wt quant.Type, f MatVecFunc) {
	r := NewRand(uint64(wt) + 1)
	xt := ActivationType(wt)
	for _, k := range Ks(wt) {
		for _, wm := range Modes {
			for _, xm := range Modes {
				rows := Rows[r.IntN(len(Rows))]
				if wm == Mixed {
					rows = 13
				}
				name := fmt.Sprintf("k=%d/w=%s/x=%s/rows=%d", k, wm, xm, rows)
				w := Misalign(weights(r, wt, rows, k, wm), r.IntN(64))
				xq := Misalign(activations(r, wt, k, xm), r.IntN(64))
				checkMatVec(t, name, wt, xt, f, w, xq, rows, k)
				if t.Failed() {
					return
				}
			}
		}
	}
}

func checkMatVec(t *testing.T, name string, wt, xt quant.Type, f MatVecFunc, w, xq []byte, rows, k int) {
	t.Helper()
	buf, dst := Guarded(rows)
	f(dst, w, xq, k)
	CheckGuards(t, buf)
	rowBytes := len(w) / rows
	tol := Tolerance(wt, k)
	for i := 0; i < rows; i++ {
		want, scale := Dot(wt, xt, w[i*rowBytes:(i+1)*rowBytes], xq, k)
		if !Close(dst[i], want, scale, tol) {
			t.Fatalf("%s: row %d: %s (tolerance %.3g)", name, i, Describe(dst[i], want, scale), tol)
		}
	}
}
