package requant_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/requant"
	"github.com/damascus-llm/damascus/model/synth/synthtest"
)

// Our requantizer and llama.cpp's llama_model_quantize, given the same F16
// model, write the same tensors in the same order with the same types and,
// since both use ggml's reference quantizers without an importance matrix,
// the same bytes.
func TestSameAsLlamaCpp(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "tiny-f16.gguf")
	synthtest.Write(t, synthtest.Preset(t, "tiny"), "F16", 5, src)
	in := gguftest.Open(t, src)

	for _, name := range []string{"Q4_K_M", "Q8_0", "Q4_0"} {
		t.Run(name, func(t *testing.T) {
			if testing.Short() && name != "Q4_K_M" {
				t.Skip("-short: Q4_K_M only")
			}
			ft, _ := ftype.Parse(name)
			ours := filepath.Join(dir, "ours-"+name+".gguf")
			theirs := filepath.Join(dir, "llama-"+name+".gguf")
			w, _, err := requant.Convert(in, ft, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WriteFile(ours); err != nil {
				t.Fatal(err)
			}
			if err := llamacpp.QuantizeModel(src, theirs, name, 2); err != nil {
				t.Fatal(err)
			}
			a := gguftest.Open(t, ours)
			b := gguftest.Open(t, theirs)
			for _, key := range []string{"general.file_type", "general.quantization_version"} {
				x, err1 := a.Uint32(key)
				y, err2 := b.Uint32(key)
				if err1 != nil || err2 != nil || x != y {
					t.Errorf("%s: ours %d (%v), llama.cpp %d (%v)", key, x, err1, y, err2)
				}
			}
			if len(a.Tensors) != len(b.Tensors) {
				t.Fatalf("%d tensors, llama.cpp %d", len(a.Tensors), len(b.Tensors))
			}
			for i := range a.Tensors {
				x, y := &a.Tensors[i], &b.Tensors[i]
				if x.Name != y.Name || x.Type != y.Type {
					t.Errorf("tensor %d: ours %s %s, llama.cpp %s %s", i, x.Name, x.Type, y.Name, y.Type)
					continue
				}
				if !bytes.Equal(a.TensorData(x), b.TensorData(y)) {
					t.Errorf("%s (%s): data differ from llama.cpp's", x.Name, x.Type)
				}
			}
		})
	}
}
