package llamacpp

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/quant"
)

// These tests tie gguf's writer to llama.cpp: files it writes must
// load there and compute exactly what llama.cpp's own files compute.

// stories260KLogits evaluates the "Once upon a time" prompt on path.
func stories260KLogits(t *testing.T, path string) [][]float32 {
	t.Helper()
	m, err := OpenModel(path, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewContext(ContextOptions{NCtx: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	logits, err := c.Logits([]int32{1, 403, 407, 261, 378}, []int{0, 1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	return logits
}

func f32s(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// TestOurRewriteLoadsInLlamaCpp rewrites stories260K with gguf's
// writer, changing what a rewrite may change (alignment 64, tensors and
// metadata in reverse order): llama.cpp must compute identical logits.
func TestOurRewriteLoadsInLlamaCpp(t *testing.T) {
	requireLib(t)
	orig := testdata.Stories260KGGUF.Require(t)
	f := gguftest.Open(t, orig)
	w := gguf.NewWriter()
	for _, kv := range slices.Backward(f.KV) {
		if kv.Key != gguf.AlignmentKey {
			w.Set(kv.Key, kv.Value)
		}
	}
	w.SetAlignment(64)
	for _, ti := range slices.Backward(f.Tensors) {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(&ti)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "rewrite.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	if want, got := stories260KLogits(t, orig), stories260KLogits(t, out); !reflect.DeepEqual(want, got) {
		t.Error("llama.cpp computes different logits for our rewrite of stories260K")
	}
}

// TestOurQ8_0MatchesLlamaCppQuantize has llama.cpp quantize stories260K to
// Q8_0, then builds the same file ourselves (our writer; each tensor
// converted to the type llama.cpp chose, with the ggml block oracle): the
// tensor bytes and llama.cpp's logits must be identical.
func TestOurQ8_0MatchesLlamaCppQuantize(t *testing.T) {
	requireLib(t)
	orig := testdata.Stories260KGGUF.Require(t)
	dir := t.TempDir()
	theirs := filepath.Join(dir, "llama.cpp-q8_0.gguf")
	if err := QuantizeModel(orig, theirs, "Q8_0", 1); err != nil {
		t.Fatal(err)
	}
	src, err := gguf.Open(orig)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ref, err := gguf.Open(theirs)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()

	w := gguf.NewWriter()
	for _, kv := range ref.KV {
		w.Set(kv.Key, kv.Value)
	}
	for _, rt := range ref.Tensors {
		st, ok := src.Tensor(rt.Name)
		if !ok || st.Type != quant.F32 {
			t.Fatalf("tensor %s: not an F32 tensor of the original", rt.Name)
		}
		data := src.TensorData(st)
		if rt.Type != quant.F32 {
			perRow := int(rt.Dims[0])
			data, err = Quantize(rt.Type, f32s(data), int(st.Elements())/perRow, perRow)
			if err != nil {
				t.Fatalf("%s: %v", rt.Name, err)
			}
		}
		if !bytes.Equal(data, ref.TensorData(&rt)) {
			t.Errorf("%s (%s): our bytes differ from llama.cpp's", rt.Name, rt.Type)
		}
		if err := w.AddTensor(rt.Name, rt.Type, rt.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	ours := filepath.Join(dir, "ours-q8_0.gguf")
	if err := w.WriteFile(ours); err != nil {
		t.Fatal(err)
	}
	if want, got := stories260KLogits(t, theirs), stories260KLogits(t, ours); !reflect.DeepEqual(want, got) {
		t.Error("llama.cpp computes different logits for our Q8_0 file than for its own")
	}
}
