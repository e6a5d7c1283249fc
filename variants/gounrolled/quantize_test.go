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

	"github.com/damascus-llm/damascus/internal/ggml"
	"github.com/damascus-llm/damascus/internal/numcmp"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/gounrolled"
)

var (
	refOnce sync.Once
	refQ8K  func(x *float32, y unsafe.Pointer, k int64)
	refErr  error
)

// ggmlQ8KRef binds ggml's quantize_row_q8_K_ref, which the library's public
// quantizer does not reach (Q8_K is an activation-only type).
func ggmlQ8KRef(t *testing.T) func(x *float32, y unsafe.Pointer, k int64) {
	refOnce.Do(func() {
		if refErr = ggml.Available(); refErr != nil {
			return
		}
		dir, err := ggml.LibDir()
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
	for name, x := range ledgertest.QuantizeInputs(n) {
		want := make([]byte, n/256*ledgertest.Q8KBytes)
		ref(&x[0], unsafe.Pointer(&want[0]), n)
		got := make([]byte, len(want))
		for i := range got {
			got[i] = 0xa5 // every byte must be written
		}
		gounrolled.QuantizeQ8K(got, x)
		for b := 0; b < n/256; b++ {
			blk := want[b*ledgertest.Q8KBytes : (b+1)*ledgertest.Q8KBytes]
			if binary.LittleEndian.Uint32(blk) == 0 {
				clear(blk[4:]) // ggml leaves the bsums of an all-zero block unwritten
			}
		}
		checkBlocks(t, name, got, want, ledgertest.Q8KBytes)
	}
}

func TestQuantizeQ8_0MatchesGGMLRef(t *testing.T) {
	ledgertest.RequireGGML(t)
	const n = 32 * 40
	for name, x := range ledgertest.QuantizeInputs(n) {
		want, err := ggml.Quantize(quant.Q8_0, x, 1, n)
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Repeat([]byte{0xa5}, len(want))
		gounrolled.QuantizeQ8_0(got, x)
		checkBlocks(t, name, got, want, ledgertest.Q80Bytes)
	}
}

func TestFloat32ToFP16MatchesGGML(t *testing.T) {
	ledgertest.RequireGGML(t)
	r := ledgertest.NewRand(3)
	x := make([]float32, 1<<14)
	for i := range x {
		x[i] = math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(x[i])) {
			x[i] = 0
		}
	}
	want, err := ggml.Quantize(quant.F16, x, 1, len(x))
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

// checkBlocks reports the first byte where got, a quantizer's output in
// blocks of blockBytes, differs from ggml's want: its block and offset.
func checkBlocks(t *testing.T, name string, got, want []byte, blockBytes int) {
	t.Helper()
	if i := numcmp.FirstDiff(got, want); i >= 0 {
		t.Errorf("%s: byte %d (block %d, offset %d): got %#x, ggml %#x", name, i,
			i/blockBytes, i%blockBytes, got[i], want[i])
	}
}
