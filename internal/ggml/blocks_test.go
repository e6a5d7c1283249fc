package ggml

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/numcmp"
	"github.com/damascus-llm/damascus/quant"
)

// requireLib skips the test when the pinned llama.cpp is not installed and
// fails it when the libraries are there but do not load.
func requireLib(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if errors.Is(err, ErrNotInstalled) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

func TestLibDirMissing(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	if _, err := LibDir(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("LibDir with an empty %s: got %v, want ErrNotInstalled", DirEnv, err)
	}
	if ErrNotInstalled.Error() != "llama.cpp baseline not installed: run make baseline" {
		t.Errorf("ErrNotInstalled says %q", ErrNotInstalled)
	}
}

func TestTraitsMatchQuantTable(t *testing.T) {
	requireLib(t)
	for _, typ := range quant.KnownTypes() {
		tr, err := Traits(typ)
		if err != nil {
			t.Errorf("%s: %v", typ, err)
			continue
		}
		if !strings.EqualFold(tr.Name, typ.String()) || tr.BlockSize != typ.BlockSize() || tr.TypeSize != typ.TypeSize() {
			t.Errorf("type %d: ggml says %s block %d size %d; quant says %s block %d size %d",
				uint32(typ), tr.Name, tr.BlockSize, tr.TypeSize, typ, typ.BlockSize(), typ.TypeSize())
		}
	}
	// Ids ggml knows and quant does not are worth a note, not a failure.
	for id := range uint32(TypeCount) {
		typ := quant.Type(id)
		if typ.Known() {
			continue
		}
		if tr, err := Traits(typ); err == nil {
			t.Logf("ggml type %d (%s, block %d, %d bytes) is not in quant", id, tr.Name, tr.BlockSize, tr.TypeSize)
		}
	}
	if _, err := Traits(quant.Type(4)); err == nil {
		t.Error("Traits(4): retired id accepted")
	}
	if _, err := Traits(quant.Type(1000)); err == nil {
		t.Error("Traits(1000): id beyond GGML_TYPE_COUNT accepted")
	}
}

func randomRows(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// slowQuantizers take seconds to build their search tables; they run only with
// DAMASCUS_LLAMACPP_SLOW=1.
var slowQuantizers = map[quant.Type]bool{quant.IQ2_S: true, quant.IQ1_M: true}

func TestQuantizeDequantizeRoundTrip(t *testing.T) {
	requireLib(t)
	// Bounds on relative RMS error for Gaussian input; loose enough for any
	// correct quantizer of that width, far below what a wrong layout gives.
	bound := map[quant.Type]float64{
		quant.F32: 0, quant.F16: 1e-3, quant.BF16: 5e-3,
		quant.Q8_0: 0.01, quant.Q6_K: 0.03, quant.Q5_0: 0.06, quant.Q5_1: 0.06, quant.Q5_K: 0.06,
		quant.Q4_0: 0.12, quant.Q4_1: 0.12, quant.Q4_K: 0.12, quant.IQ4_NL: 0.12, quant.IQ4_XS: 0.12,
		quant.Q3_K: 0.25, quant.IQ3_S: 0.25, quant.IQ3_XXS: 0.25, quant.Q2_K: 0.45, quant.IQ2_S: 0.45,
		quant.MXFP4: 0.2, quant.IQ1_M: 0.7, quant.TQ1_0: 1.1, quant.TQ2_0: 1.1,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const nrows, nPerRow = 3, 512
	src := randomRows(rng, nrows*nPerRow)
	for _, typ := range quant.KnownTypes() {
		tr, err := Traits(typ)
		if err != nil {
			t.Fatal(err)
		}
		if !tr.CanQuantize || !tr.CanDequantize {
			continue
		}
		if slowQuantizers[typ] && os.Getenv("DAMASCUS_LLAMACPP_SLOW") == "" {
			continue
		}
		q, err := Quantize(typ, src, nrows, nPerRow)
		if err != nil {
			t.Errorf("Quantize %s: %v", typ, err)
			continue
		}
		if want, _ := quant.RowSize(typ, nPerRow); len(q) != nrows*int(want) {
			t.Errorf("Quantize %s: %d bytes, want %d", typ, len(q), nrows*int(want))
		}
		back, err := Dequantize(typ, q, len(src))
		if err != nil {
			t.Errorf("Dequantize %s: %v", typ, err)
			continue
		}
		b, ok := bound[typ]
		if !ok {
			t.Errorf("%s: no error bound in this test", typ)
			continue
		}
		if e := numcmp.RelRMSE(src, back); e > b || math.IsNaN(e) {
			t.Errorf("%s round trip: relative RMSE %.4g > %.4g", typ, e, b)
		}
	}
}

func TestQuantizeRejectsBadInput(t *testing.T) {
	requireLib(t)
	good := make([]float32, 256)
	nan := make([]float32, 256)
	nan[7] = float32(math.NaN())
	inf := make([]float32, 256)
	inf[3] = float32(math.Inf(-1))
	cases := []struct {
		name        string
		typ         quant.Type
		src         []float32
		rows, perRw int
	}{
		{"NaN", quant.Q8_0, nan, 1, 256},
		{"Inf", quant.Q4_K, inf, 1, 256},
		{"partial block", quant.Q4_K, good[:100], 1, 100},
		{"count mismatch", quant.Q8_0, good, 2, 256},
		{"needs imatrix", quant.IQ2_XXS, good, 1, 256},
		{"no quantizer", quant.Q8_K, good, 1, 256},
		{"unknown type", quant.Type(77), good, 1, 256},
	}
	for _, c := range cases {
		if _, err := Quantize(c.typ, c.src, c.rows, c.perRw); err == nil {
			t.Errorf("%s: Quantize(%s) accepted it", c.name, c.typ)
		}
	}
	if _, err := Dequantize(quant.Q4_K, make([]byte, 143), 256); err == nil {
		t.Error("Dequantize accepted a short Q4_K block")
	}
}

// TestDequantizeKnownBlock checks the oracle against a hand-built Q8_0 block,
// so a wrong binding cannot agree with itself through a round trip.
func TestDequantizeKnownBlock(t *testing.T) {
	requireLib(t)
	blk := make([]byte, 34)
	blk[0], blk[1] = 0x00, 0x38 // fp16 0.5
	for i := range 32 {
		blk[2+i] = byte(int8(i - 16))
	}
	got, err := Dequantize(quant.Q8_0, blk, 32)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if want := 0.5 * float32(i-16); v != want {
			t.Fatalf("value %d: got %v, want %v", i, v, want)
		}
	}
}

func TestVecDotQ4KQ8K(t *testing.T) {
	requireLib(t)
	tr, err := Traits(quant.Q4_K)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.HasVecDot || tr.VecDotType != quant.Q8_K {
		t.Fatalf("Q4_K vec_dot: has %v, type %s; want Q8_K", tr.HasVecDot, tr.VecDotType)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 1024
	x, err := Quantize(quant.Q4_K, randomRows(rng, n), 1, n)
	if err != nil {
		t.Fatal(err)
	}
	y, err := QuantizeRowCPU(quant.Q8_K, randomRows(rng, n))
	if err != nil {
		t.Fatal(err)
	}
	got, err := VecDot(quant.Q4_K, n, x, y)
	if err != nil {
		t.Fatal(err)
	}
	xf, err := Dequantize(quant.Q4_K, x, n)
	if err != nil {
		t.Fatal(err)
	}
	yf := dequantizeQ8K(y)
	var want, mag float64
	for i := range xf {
		want += float64(xf[i]) * float64(yf[i])
		mag += math.Abs(float64(xf[i]) * float64(yf[i]))
	}
	if math.Abs(float64(got)-want) > 1e-4*mag {
		t.Errorf("vec_dot Q4_K·Q8_K = %v, float64 dot of the dequantized blocks = %v", got, want)
	}
	if _, err := VecDot(quant.Q4_K, n, x, y[:len(y)-1]); err == nil {
		t.Error("VecDot accepted a short y")
	}
}

// dequantizeQ8K expands Q8_K blocks (float32 d, 256 int8, 16 int16 sums),
// for which ggml has no to_float.
func dequantizeQ8K(b []byte) []float32 {
	var out []float32
	for ; len(b) >= 292; b = b[292:] {
		d := math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
		for i := range 256 {
			out = append(out, d*float32(int8(b[4+i])))
		}
	}
	return out
}

func TestValidRowData(t *testing.T) {
	requireLib(t)
	q, err := Quantize(quant.Q8_0, make([]float32, 64), 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := ValidRowData(quant.Q8_0, q); !ok || err != nil {
		t.Errorf("zero Q8_0 blocks: valid %v, %v", ok, err)
	}
	q[34], q[35] = 0x00, 0x7e // second block's scale: fp16 NaN
	if ok, err := ValidRowData(quant.Q8_0, q); ok || err != nil {
		t.Errorf("Q8_0 block with a NaN scale: valid %v, %v", ok, err)
	}
	if _, err := ValidRowData(quant.Q8_0, q[:33]); err == nil {
		t.Error("ValidRowData accepted a partial block")
	}
}
