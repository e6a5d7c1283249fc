package gounrolled_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/model/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled"
	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
)

// quantizeInputs are activation rows that probe every rounding decision:
// Gaussian values, exact ties at .5 after scaling, ±max of equal magnitude
// (the first decides the sign of d), zeros, subnormals and huge values.
func quantizeInputs(n int) map[string][]float32 {
	r := kerneltest.NewRand(7)
	in := map[string][]float32{"gauss": kerneltest.Floats(r, n)}
	ties := make([]float32, n)
	for i := range ties {
		ties[i] = float32(i%200-100) + 0.5 // with max 127 the scale is ±1: exact ties
		if i%32 == 0 {
			ties[i] = 127
		}
	}
	in["ties"] = ties
	pm := kerneltest.Floats(r, n)
	for b := 0; b < n; b += 32 {
		pm[b+3], pm[b+9] = -1000, 1000
		if b/32%2 == 1 {
			pm[b+3], pm[b+9] = 1000, -1000
		}
	}
	in["plusminus"] = pm
	zero := kerneltest.Floats(r, n)
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
	huge := kerneltest.Floats(r, n)
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

var (
	refOnce sync.Once
	refQ8K  func(x *float32, y unsafe.Pointer, k int64)
	refErr  error
)

// ggmlQ8KRef binds ggml's quantize_row_q8_K_ref, which the library's public
// quantizer does not reach (Q8_K is an activation-only type).
func ggmlQ8KRef(t *testing.T) func(x *float32, y unsafe.Pointer, k int64) {
	refOnce.Do(func() {
		if refErr = llamacpp.Available(); refErr != nil {
			return
		}
		dir, err := llamacpp.LibDir()
		if err != nil {
			refErr = err
			return
		}
		h, err := purego.Dlopen(filepath.Join(dir, "libggml-base.so"), purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			refErr = err
			return
		}
		sym, err := purego.Dlsym(h, "quantize_row_q8_K_ref")
		if err != nil {
			refErr = err
			return
		}
		purego.RegisterFunc(&refQ8K, sym)
	})
	if refErr != nil {
		t.Skipf("pinned llama.cpp not usable (run make baseline): %v", refErr)
	}
	return refQ8K
}

func TestQuantizeQ8KMatchesGGMLRef(t *testing.T) {
	ref := ggmlQ8KRef(t)
	const n = 256 * 6
	for name, x := range quantizeInputs(n) {
		want := make([]byte, n/256*kerneltest.Q8KBytes)
		ref(&x[0], unsafe.Pointer(&want[0]), n)
		got := make([]byte, len(want))
		for i := range got {
			got[i] = 0xa5 // every byte must be written
		}
		gounrolled.QuantizeQ8K(got, x)
		for b := 0; b < n/256; b++ {
			blk := want[b*kerneltest.Q8KBytes : (b+1)*kerneltest.Q8KBytes]
			if binary.LittleEndian.Uint32(blk) == 0 {
				clear(blk[4:]) // ggml leaves the bsums of an all-zero block unwritten
			}
		}
		if i := firstDiff(got, want); i >= 0 {
			t.Errorf("%s: byte %d (block %d, offset %d): got %#x, ggml %#x", name, i,
				i/kerneltest.Q8KBytes, i%kerneltest.Q8KBytes, got[i], want[i])
		}
	}
}

func TestQuantizeQ8_0MatchesGGMLRef(t *testing.T) {
	if err := llamacpp.Available(); err != nil {
		t.Skipf("pinned llama.cpp not usable (run make baseline): %v", err)
	}
	const n = 32 * 40
	for name, x := range quantizeInputs(n) {
		want, err := llamacpp.Quantize(quant.Q8_0, x, 1, n)
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Repeat([]byte{0xa5}, len(want))
		gounrolled.QuantizeQ8_0(got, x)
		if i := firstDiff(got, want); i >= 0 {
			t.Errorf("%s: byte %d (block %d, offset %d): got %#x, ggml %#x", name, i,
				i/kerneltest.Q80Bytes, i%kerneltest.Q80Bytes, got[i], want[i])
		}
	}
}

func TestFloat32ToFP16MatchesGGML(t *testing.T) {
	if err := llamacpp.Available(); err != nil {
		t.Skipf("pinned llama.cpp not usable (run make baseline): %v", err)
	}
	r := kerneltest.NewRand(3)
	x := make([]float32, 1<<14)
	for i := range x {
		x[i] = math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(x[i])) {
			x[i] = 0
		}
	}
	want, err := llamacpp.Quantize(quant.F16, x, 1, len(x))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		h := binary.LittleEndian.Uint16(want[2*i:])
		if got := gounrolled.Float32ToFP16(v); got != h {
			t.Fatalf("Float32ToFP16(%g = %#x) = %#x, ggml %#x", v, math.Float32bits(v), got, h)
		}
		back := gounrolled.FP16ToFloat32(h)
		if got := gounrolled.Float32ToFP16(back); got != h {
			t.Fatalf("round trip of %#x gives %#x", h, got)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
