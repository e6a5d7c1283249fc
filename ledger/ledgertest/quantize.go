package ledgertest

import (
	"bytes"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// QuantizeInputs are activation rows that probe every rounding decision:
// Gaussian values, exact ties at .5 after scaling, ±max of equal magnitude
// (the first decides the sign of d), zeros, subnormals and huge values.
func QuantizeInputs(n int) map[string][]float32 {
	r := NewRand(7)
	in := map[string][]float32{"gauss": Floats(r, n)}
	ties := make([]float32, n)
	for i := range ties {
		ties[i] = float32(i%200-100) + 0.5 // with max 127 the scale is ±1: exact ties
		if i%32 == 0 {
			ties[i] = 127
		}
	}
	in["ties"] = ties
	pm := Floats(r, n)
	for b := 0; b < n; b += 32 {
		pm[b+3], pm[b+9] = -1000, 1000
		if b/32%2 == 1 {
			pm[b+3], pm[b+9] = 1000, -1000
		}
	}
	in["plusminus"] = pm
	// ±max in the same eight lanes, late in a 256-value block: a search
	// that takes the last of equal magnitudes, or looks only at the first
	// vector, gets the sign of d wrong.
	late := Floats(r, n)
	for b := 0; b+32 <= n; b += 32 {
		if b/32%8 == 7 {
			late[b+18], late[b+22] = -1000, 1000
			if b/256%2 == 1 {
				late[b+18], late[b+22] = 1000, -1000
			}
		}
	}
	in["plusminus-late"] = late
	zero := Floats(r, n)
	clear(zero[:n/2])
	in["zeros"] = zero
	tiny := make([]float32, n)
	for i := range tiny {
		tiny[i] = math.Float32frombits(uint32(r.IntN(1 << 23))) // subnormal
		if i%3 == 0 {
			tiny[i] = -tiny[i]
		}
	}
	in["subnormal"] = tiny
	huge := Floats(r, n)
	for i := range huge {
		huge[i] *= 1e35
	}
	in["huge"] = huge
	ints := make([]float32, n)
	for i := range ints {
		ints[i] = float32(r.IntN(255) - 127)
	}
	in["integers"] = ints
	return in
}

// QuantizeFunc is ledger.Quantize's shape.
type QuantizeFunc = func(dst []byte, x []float32)

// Quantize checks an activation quantizer into t byte for byte against the
// go-unrolled one (itself checked against ggml's reference), on every input
// of QuantizeInputs at several lengths, misaligned, with guard bytes around dst.
func Quantize(t *testing.T, typ quant.Type, f QuantizeFunc) {
	var ref QuantizeFunc
	switch typ {
	case quant.Q8_K:
		ref = quant.QuantizeQ8K
	case quant.Q8_0:
		ref = quant.QuantizeQ8_0
	default:
		t.Fatalf("ledgertest: no reference quantizer for %s", typ)
	}
	bs, ts := typ.BlockSize(), typ.TypeSize()
	for _, blocks := range []int{1, 2, 3, 12, 33} {
		n := blocks * bs
		for name, x := range QuantizeInputs(n) {
			want := make([]byte, blocks*ts)
			ref(want, x)
			const pad = 64
			buf := bytes.Repeat([]byte{0xa5}, len(want)+2*pad+1)
			got := buf[pad+1 : pad+1+len(want)] // odd offset
			xs := make([]float32, n+1)[1:]      // misaligned input
			copy(xs, x)
			f(got, xs)
			for i := range buf {
				if (i < pad+1 || i >= pad+1+len(want)) && buf[i] != 0xa5 {
					t.Fatalf("%s, %d blocks: guard byte %d overwritten", name, blocks, i)
				}
			}
			if !bytes.Equal(got, want) {
				i := 0
				for got[i] == want[i] {
					i++
				}
				t.Fatalf("%s, %d blocks: byte %d (block %d, offset %d): got %#x, want %#x",
					name, blocks, i, i/ts, i%ts, got[i], want[i])
			}
		}
	}
}
