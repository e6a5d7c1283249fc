// Package synthtest holds test helpers that build synthetic Llama 3.2-shaped
// models (package synth) with the real Llama 3 vocabulary from the shared
// test data.
package synthtest

import (
	"sync"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
)

var (
	vocabOnce sync.Once
	vocabKV   []gguf.KV
	vocabErr  error
)

// Llama3Vocab returns the Llama 3 tokenizer metadata, loaded once per test
// binary (about a second); tb is skipped where the shared tokenizer.json or
// chat template is absent.
func Llama3Vocab(tb testing.TB) []gguf.KV {
	tb.Helper()
	testdata.Llama3TokenizerJSON.Require(tb)
	testdata.Llama32Template.Require(tb)
	vocabOnce.Do(func() { vocabKV, vocabErr = llama3vocab.Metadata() })
	if vocabErr != nil {
		tb.Fatal(vocabErr)
	}
	return vocabKV
}

// Preset is the named preset, failing tb when there is none.
func Preset(tb testing.TB, name string) synth.Preset {
	tb.Helper()
	p, err := synth.LookupPreset(name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Build builds the synthetic model of p in the llama.cpp file type typ
// ("Q4_K_M", "F16", …) from seed on workers goroutines, with the Llama 3
// vocabulary, failing tb on any error.
func Build(tb testing.TB, p synth.Preset, typ string, seed uint64, workers int) *gguf.Writer {
	tb.Helper()
	vocab := Llama3Vocab(tb)
	ft, err := ftype.Parse(typ)
	if err != nil {
		tb.Fatal(err)
	}
	w, _, err := synth.Build(synth.Options{Preset: p, Type: ft, Seed: seed, Tokenizer: vocab, Workers: workers})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// Write builds the model as Build does on 2 workers and writes it to path.
func Write(tb testing.TB, p synth.Preset, typ string, seed uint64, path string) {
	tb.Helper()
	if err := Build(tb, p, typ, seed, 2).WriteFile(path); err != nil {
		tb.Fatal(err)
	}
}
