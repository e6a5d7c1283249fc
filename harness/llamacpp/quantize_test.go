package llamacpp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestQuantizeModelQ8_0(t *testing.T) {
	requireLib(t)
	in := testdata.Stories260KGGUF.Require(t)
	out := filepath.Join(t.TempDir(), "stories260K-q8_0.gguf")
	if err := QuantizeModel(in, out, "q8_0", 1); err != nil {
		t.Fatal(err)
	}
	m, err := OpenModel(out, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.Desc, "Q8_0") || info.NVocab != 512 {
		t.Errorf("quantized model: %+v", info)
	}
	c, err := m.NewContext(ContextOptions{NCtx: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Q8_0 keeps stories260K's greedy continuation of "Once upon a time".
	toks := []int32{1, 403, 407, 261, 378}
	logits, err := c.Logits(toks, []int{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range logits {
		if argmax(row) != int(toks[i+1]) {
			t.Errorf("Q8_0 position %d: argmax %d, want %d", i, argmax(row), toks[i+1])
		}
	}
}

func TestQuantizeModelErrors(t *testing.T) {
	requireLib(t)
	dir := t.TempDir()
	if err := QuantizeModel(filepath.Join(dir, "missing.gguf"), filepath.Join(dir, "o.gguf"), "Q8_0", 1); err == nil {
		t.Error("QuantizeModel accepted a missing input")
	}
	in := testdata.Stories260KGGUF.Require(t)
	if err := QuantizeModel(in, filepath.Join(dir, "o.gguf"), "Q9_9", 1); err == nil || !strings.Contains(err.Error(), "Q4_K_M") {
		t.Errorf("unknown type: %v", err)
	}
	// A file that is not GGUF: llama.cpp reports failure, no crash.
	if err := QuantizeModel(testdata.Stories260KTok.Require(t), filepath.Join(dir, "o.gguf"), "Q8_0", 1); err == nil {
		t.Error("QuantizeModel accepted a non-GGUF input")
	}
}
