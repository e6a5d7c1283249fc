package llama

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// Load gives the model, tokenizer and placement the steps it replaces give,
// and a context over its model computes the same logits as one over the
// model read step by step.
func TestLoadMatchesTheStepsItReplaces(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	for _, place := range []Placement{PlaceMmap, PlaceHuge} {
		t.Run(string(place), func(t *testing.T) {
			ld, err := Load(path, LoadOptions{Placement: place})
			if err != nil {
				t.Fatal(err)
			}
			defer ld.Close()
			want, tok := openStories(t)
			if ld.Model.Config != want.Config || ld.Tokenizer == nil || ld.Tokenizer.BOS() != tok.BOS() {
				t.Fatalf("config %+v, tokenizer %v; want %+v", ld.Model.Config, ld.Tokenizer, want.Config)
			}
			if place == PlaceMmap && ld.Placed.Placement != PlaceMmap {
				t.Errorf("placement %s, want mmap", ld.Placed.Placement)
			}
			logits := func(m *Model) []float32 {
				return evalLogits(t, m, Options{NCtx: 16, Threads: 2}, []int32{1, 42, 7}, true)
			}
			got, exp := logits(ld.Model), logits(want)
			for i := range exp {
				if math.Float32bits(got[i]) != math.Float32bits(exp[i]) {
					t.Fatalf("logit %d is %v, want %v", i, got[i], exp[i])
				}
			}
			if err := ld.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	ld, err := Load(path, LoadOptions{NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Close()
	if ld.Tokenizer != nil {
		t.Error("NoTokenizer built a tokenizer")
	}
}

// An architecture nobody registered is named in the error, with the ones
// that are.
func TestLoadUnknownArchitecture(t *testing.T) {
	w := gguf.NewWriter()
	w.Set("general.architecture", gguf.Str("qwen2"))
	path := filepath.Join(t.TempDir(), "qwen2.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `architecture "qwen2" is not supported (registered: llama)`) || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.gguf"), LoadOptions{}); err == nil {
		t.Error("a missing file loaded")
	}
}
