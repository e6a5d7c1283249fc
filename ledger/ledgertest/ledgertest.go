// Package ledgertest is the conformance suite every variant family's tests
// run: Run walks the ledger's registry and puts each variant registered by
// the calling package through the gate (ledger/gate: every catalogue shape,
// guards, untouched inputs, unwritten outputs, NaN/Inf, the float64
// reference and ggml's own kernels), then through this package's deeper
// checks of its op kind (adversarial blocks, every tail length, misaligned
// inputs, guard values around the output, in-place use) and the ggml
// vec_dot cross-check. It also holds what those checks are made of:
// float64 reference dot products computed from dequantized blocks,
// generators of random and adversarial blocks, and guarded output buffers
// that catch writes outside the slice a kernel was given.
package ledgertest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// Block geometry (bytes), from ggml-common.h.
const (
	QK       = 256
	Q4KBytes = 144
	Q5KBytes = 176
	Q6KBytes = 210
	Q8KBytes = 292
	Q80Bytes = 34
)

// NewRand returns a deterministic generator for a test.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// Mode picks what kind of blocks a generator makes.
type Mode int

const (
	Random    Mode = iota // uniformly random bytes with sane fp16 scales
	MaxScales             // every scale and quant at its largest magnitude
	MinValues             // quants at their most negative / smallest codes
	Zero                  // all-zero blocks
	Mixed                 // each block drawn from the modes above
)

func (m Mode) String() string {
	return [...]string{"random", "max", "min", "zero", "mixed"}[m]
}

// Modes lists every mode, for table-driven tests.
var Modes = []Mode{Random, MaxScales, MinValues, Zero, Mixed}

func pick(r *rand.Rand, m Mode) Mode {
	if m == Mixed {
		return Mode(r.IntN(int(Mixed)))
	}
	return m
}

// fp16 in [lo, hi) of magnitude, random sign when signed.
func randHalf(r *rand.Rand, lo, hi float64, signed bool) uint16 {
	v := lo + r.Float64()*(hi-lo)
	if signed && r.IntN(2) == 0 {
		v = -v
	}
	return quant.Float32ToFP16(float32(v))
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// setAll sets every byte of b to v.
func setAll(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// blocks returns nb blocks of size bytes, zeroed, each handed to set with
// the mode to make it in (m, or for Mixed one drawn per block).
func blocks(r *rand.Rand, nb, size int, m Mode, set func(blk []byte, mode Mode)) []byte {
	out := make([]byte, nb*size)
	for b := 0; b < nb; b++ {
		set(out[b*size:(b+1)*size], pick(r, m))
	}
	return out
}

// Q4K returns nb Q4_K blocks.
func Q4K(r *rand.Rand, nb int, m Mode) []byte { return k4Blocks(r, nb, Q4KBytes, m) }

// Q5K returns nb Q5_K blocks: Q4K's modes, the fifth bits (qh, bytes
// 16-47) drawn, set or cleared with the quants.
func Q5K(r *rand.Rand, nb int, m Mode) []byte { return k4Blocks(r, nb, Q5KBytes, m) }

// k4Blocks returns nb blocks of size bytes laid out as Q4_K's and Q5_K's
// (d, dmin, 12 scale bytes, then quant bits).
func k4Blocks(r *rand.Rand, nb, size int, m Mode) []byte {
	return blocks(r, nb, size, m, func(blk []byte, mode Mode) {
		switch mode {
		case Random:
			fill(r, blk)
			binary.LittleEndian.PutUint16(blk[0:], randHalf(r, 1e-4, 0.05, false))
			binary.LittleEndian.PutUint16(blk[2:], randHalf(r, 1e-4, 0.05, false))
		case MaxScales:
			setAll(blk, 0xff)
			binary.LittleEndian.PutUint16(blk[0:], quant.Float32ToFP16(65504))
			binary.LittleEndian.PutUint16(blk[2:], quant.Float32ToFP16(-65504))
		case MinValues:
			fill(r, blk[4:16])
			clear(blk[16:])
			binary.LittleEndian.PutUint16(blk[0:], randHalf(r, 1, 2, true))
			binary.LittleEndian.PutUint16(blk[2:], randHalf(r, 1, 2, true))
		case Zero:
			clear(blk)
		}
	})
}

// Q6K returns nb Q6_K blocks.
func Q6K(r *rand.Rand, nb int, m Mode) []byte {
	return blocks(r, nb, Q6KBytes, m, func(blk []byte, mode Mode) {
		switch mode {
		case Random:
			fill(r, blk)
			binary.LittleEndian.PutUint16(blk[208:], randHalf(r, 1e-4, 0.05, true))
		case MaxScales: // quants 63 (+31 after the offset), scales -128
			setAll(blk[:192], 0xff)
			setAll(blk[192:208], 0x80)
			binary.LittleEndian.PutUint16(blk[208:], quant.Float32ToFP16(65504))
		case MinValues: // quants 0 (-32 after the offset), scales 127
			clear(blk[:192])
			setAll(blk[192:208], 127)
			binary.LittleEndian.PutUint16(blk[208:], quant.Float32ToFP16(-65504))
		case Zero:
			clear(blk)
		}
	})
}

// Q8_0 returns nb Q8_0 blocks (quants may be -128).
func Q8_0(r *rand.Rand, nb int, m Mode) []byte {
	return blocks(r, nb, Q80Bytes, m, func(blk []byte, mode Mode) {
		switch mode {
		case Random:
			fill(r, blk)
			binary.LittleEndian.PutUint16(blk, randHalf(r, 1e-4, 0.05, true))
		case MaxScales:
			setAll(blk[2:Q80Bytes], 127)
			binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(65504))
		case MinValues:
			setAll(blk[2:Q80Bytes], 0x80)
			binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(-65504))
		case Zero:
			clear(blk)
		}
	})
}

// Q8K returns nb raw Q8_K activation blocks with consistent bsums. Quants
// are in [-128, 127] (-128 never comes out of the quantizer, but the
// K-quant kernels must still take it).
func Q8K(r *rand.Rand, nb int, m Mode) []byte {
	return blocks(r, nb, Q8KBytes, m, func(blk []byte, mode Mode) {
		var d float32
		switch mode {
		case Random:
			fill(r, blk[4:260])
			d = float32(r.NormFloat64() * 0.01)
		case MaxScales:
			setAll(blk[4:260], 127)
			d = 1e4
		case MinValues:
			setAll(blk[4:260], 0x80)
			d = -1e4
		case Zero:
		}
		binary.LittleEndian.PutUint32(blk, math.Float32bits(d))
		for g := 0; g < 16; g++ {
			var s int
			for _, q := range blk[4+16*g : 20+16*g] {
				s += int(int8(q))
			}
			binary.LittleEndian.PutUint16(blk[260+2*g:], uint16(int16(s)))
		}
	})
}

// Q8KTokens returns the Q8_K activations of n tokens of nb blocks each, one
// after another, each token's blocks in a mode drawn from Modes: the batch
// input of the batched K-quant products' tests.
func Q8KTokens(r *rand.Rand, n, nb int) []byte {
	var xq []byte
	for range n {
		xq = append(xq, Q8K(r, nb, Modes[r.IntN(len(Modes))])...)
	}
	return xq
}

// Floats returns n activation values: Gaussian with occasional outliers, as
// the hidden state of a transformer looks.
func Floats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if r.IntN(64) == 0 {
			x[i] *= 50
		}
	}
	return x
}

// BytesF32 / BytesF16 / BytesBF16 encode float32 values as a kernel's input bytes.
func BytesF32(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func BytesF16(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], quant.Float32ToFP16(v))
	}
	return b
}

func BytesBF16(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(v)>>16))
	}
	return b
}

// Misalign returns a copy of b starting off bytes into a fresh buffer, so
// kernels see unaligned inputs.
func Misalign(b []byte, off int) []byte {
	buf := make([]byte, off+len(b)+64)
	copy(buf[off:], b)
	return buf[off : off+len(b) : off+len(b)]
}

// Guard is the sentinel written around outputs.
var Guard = float32(math.Float32frombits(0x7fbadbad)) // a NaN payload no kernel writes

// Guarded returns a buffer of n floats with guard values on both sides and
// the middle n to pass to a kernel.
func Guarded(n int) (buf, mid []float32) {
	const pad = 16
	buf = make([]float32, n+2*pad)
	for i := range buf {
		buf[i] = Guard
	}
	return buf, buf[pad : pad+n : pad+n]
}

// CheckGuards fails t when anything outside the middle of buf was written.
func CheckGuards(t testing.TB, buf []float32) {
	t.Helper()
	const pad = 16
	for i := 0; i < pad; i++ {
		for _, j := range []int{i, len(buf) - 1 - i} {
			if math.Float32bits(buf[j]) != math.Float32bits(Guard) {
				t.Fatalf("guard %d of %d overwritten with %v", j, len(buf), buf[j])
			}
		}
	}
}

// Close reports whether got matches the float64 reference want of a dot
// product whose terms' magnitudes sum to scale, within rel·scale.
func Close(got float32, want, scale, rel float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return math.IsNaN(float64(got)) == math.IsNaN(want) && (math.IsNaN(want) || float64(got) == want)
	}
	return math.Abs(float64(got)-want) <= rel*scale+1e-30
}

// Describe formats a mismatch for a failure message.
func Describe(got float32, want, scale float64) string {
	return fmt.Sprintf("got %v, want %v (diff %.3g, %.3g of the terms' magnitude %.3g)",
		got, want, float64(got)-want, math.Abs(float64(got)-want)/scale, scale)
}

// MustLookup is the registered variant op:name, failing the test when
// there is none.
func MustLookup(t testing.TB, op, name string) ledger.Variant {
	t.Helper()
	v, ok := ledger.Lookup(op, name)
	if !ok {
		t.Fatalf("%s:%s is not registered", op, name)
	}
	return v
}

// SameBits fails the test at the first value of got whose bits are not
// want's (two kernels that promise the same results), naming what.
func SameBits(t testing.TB, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}
