package quant_test

// Bit-for-bit comparison with ggml's own to_float and ggml_quantize_chunk,
// loaded from the pinned llama.cpp. Skips when the baseline is not installed
// (run make baseline).

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/quant"
)

// halfOffsets lists where each block type keeps its f16 scales.
var halfOffsets = map[quant.Type][]int{
	quant.Q4_0: {0}, quant.Q4_1: {0, 2}, quant.Q5_0: {0}, quant.Q5_1: {0, 2},
	quant.Q8_0: {0}, quant.Q8_1: {0, 2},
	quant.Q2_K: {80, 82}, quant.Q3_K: {108}, quant.Q4_K: {0, 2}, quant.Q5_K: {0, 2},
	quant.Q6_K: {208},
}

var dequantTypes = []quant.Type{
	quant.F32, quant.F16, quant.BF16, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1,
	quant.Q8_0, quant.Q8_1, quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q8_K,
}

// blockSets returns named sets of raw blocks of type t: random bytes with
// finite scales, entirely random bytes (NaN and infinite scales included),
// and edge patterns.
func blockSets(t quant.Type, nblocks int) map[string][]byte {
	r := rand.New(rand.NewPCG(uint64(t), 7))
	size := nblocks * t.TypeSize()
	raw := func(fill func(i int) byte) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = fill(i)
		}
		return b
	}
	random := raw(func(int) byte { return byte(r.Uint32()) })
	finite := raw(func(int) byte { return byte(r.Uint32()) })
	setScales := func(b []byte, h func() uint16) {
		for k := 0; k < nblocks; k++ {
			for _, off := range halfOffsets[t] {
				binary.LittleEndian.PutUint16(b[k*t.TypeSize()+off:], h())
			}
			if t == quant.Q8_K {
				binary.LittleEndian.PutUint32(b[k*t.TypeSize():], math.Float32bits(float32(r.NormFloat64())))
			}
		}
	}
	// Finite halves of every magnitude: random sign, exponent 0..30, mantissa.
	setScales(finite, func() uint16 { return uint16(r.IntN(2))<<15 | uint16(r.IntN(31))<<10 | uint16(r.IntN(1024)) })
	sets := map[string][]byte{
		"random": random,
		"finite": finite,
		"zeros":  make([]byte, size),
		"ones":   raw(func(int) byte { return 0xff }),
	}
	for name, h := range map[string]uint16{"max-scale": 0x7bff, "subnormal-scale": 0x0001, "neg-scale": 0xc400} {
		b := raw(func(int) byte { return byte(r.Uint32()) })
		setScales(b, func() uint16 { return h })
		sets[name] = b
	}
	return sets
}

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b)
}

func TestOracleDequantize(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	for _, typ := range dequantTypes {
		tr, err := llamacpp.Traits(typ)
		if err != nil {
			t.Fatal(err)
		}
		if !tr.CanDequantize {
			t.Logf("%s: ggml has no to_float; not compared", typ)
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			nblocks := 64
			if typ.BlockSize() == 1 {
				nblocks = 4096
			}
			for name, src := range blockSets(typ, nblocks) {
				n := nblocks * typ.BlockSize()
				want, err := llamacpp.Dequantize(typ, src, n)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, n)
				if err := quant.Dequantize(typ, src, got); err != nil {
					t.Fatal(err)
				}
				nanPairs := 0
				for i := range got {
					if sameBits(got[i], want[i]) {
						continue
					}
					// Two NaNs from NaN operands may carry different payloads
					// depending on operand order; both are NaN, which is the fact.
					if math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i])) {
						nanPairs++
						continue
					}
					t.Fatalf("%s: value %d = %g (%#08x), ggml %g (%#08x)", name, i,
						got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
				if nanPairs > 0 {
					t.Logf("%s: %d NaNs with different payloads", name, nanPairs)
				}
			}
		})
	}
}

// inputSets returns named float32 rows (n values each, n a multiple of 256).
func inputSets(n int) map[string][]float32 {
	r := rand.New(rand.NewPCG(42, 42))
	row := func(f func(i int) float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = f(i)
		}
		return x
	}
	return map[string][]float32{
		"gauss-0.02": row(func(int) float32 { return float32(r.NormFloat64() * 0.02) }),
		"gauss-1":    row(func(int) float32 { return float32(r.NormFloat64()) }),
		"uniform":    row(func(int) float32 { return float32(r.Float64()*2 - 1) }),
		"positive":   row(func(int) float32 { return float32(r.Float64()) }),
		"heavy-tail": row(func(int) float32 { return float32(r.NormFloat64() / (r.Float64() + 0.01)) }),
		"zeros":      make([]float32, n),
		"equal":      row(func(int) float32 { return -0.3 }),
		"denormals":  row(func(i int) float32 { return math.Float32frombits(uint32(r.IntN(1<<23))) * float32(i%3-1) }),
		"tiny":       row(func(int) float32 { return float32(r.NormFloat64() * 1e-20) }),
		"huge":       row(func(int) float32 { return float32(r.NormFloat64() * 3e4) }),
		"overflow":   row(func(int) float32 { return float32(r.NormFloat64() * 1e9) }),
		"integers":   row(func(int) float32 { return float32(r.IntN(33) - 16) }),
		"halves":     row(func(int) float32 { return float32(r.IntN(33)-16) + 0.5 }),
		"sparse": row(func(int) float32 {
			if r.IntN(16) == 0 {
				return float32(r.NormFloat64())
			}
			return 0
		}),
	}
}

// quantizeTypes are the types compared with ggml_quantize_chunk. Q8_K is
// not among ggml_quantize_chunk's types; it is compared with the CPU
// backend's from_float (quantize_row_q8_K) below.
var quantizeTypes = []quant.Type{
	quant.F16, quant.BF16, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q8_0,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K,
}

func TestOracleQuantize(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	const n = 4096
	inputs := inputSets(n)
	for _, typ := range append(quantizeTypes, quant.Q8_K) {
		t.Run(typ.String(), func(t *testing.T) {
			var oursErr, ggmlErr, norm float64
			for name, x := range inputs {
				got := make([]byte, n/typ.BlockSize()*typ.TypeSize())
				if err := quant.Quantize(typ, x, got); err != nil {
					t.Fatal(err)
				}
				var want []byte
				var err error
				if typ == quant.Q8_K {
					want, err = llamacpp.QuantizeRowCPU(typ, x)
				} else {
					want, err = llamacpp.Quantize(typ, x, 1, n)
				}
				if err != nil {
					t.Fatal(err)
				}
				bs := typ.TypeSize()
				for k := 0; k < len(got)/bs; k++ {
					g, w := got[k*bs:(k+1)*bs], want[k*bs:(k+1)*bs]
					if string(g) != string(w) {
						t.Errorf("%s: block %d differs from ggml's\nours %x\nggml %x", name, k, g, w)
						break
					}
				}
				if name == "gauss-0.02" || name == "gauss-1" || name == "uniform" || name == "heavy-tail" {
					oursErr += sqErr(t, typ, x, got)
					ggmlErr += sqErr(t, typ, x, want)
					for _, v := range x {
						norm += float64(v) * float64(v)
					}
				}
			}
			t.Logf("%s relative RMSE on random rows: ours %.6f, ggml %.6f", typ, math.Sqrt(oursErr/norm), math.Sqrt(ggmlErr/norm))
		})
	}
}

func sqErr(t *testing.T, typ quant.Type, x []float32, q []byte) float64 {
	y := make([]float32, len(x))
	if err := quant.Dequantize(typ, q, y); err != nil {
		t.Fatal(err)
	}
	var e float64
	for i := range x {
		d := float64(x[i]) - float64(y[i])
		e += d * d
	}
	return e
}
