// Package tokenizertest holds test helpers for code that builds tokenizers
// from GGUF files.
package tokenizertest

import (
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

// FromGGUF builds the tokenizer of f, failing tb if it cannot: the step
// every test that encodes text for a model starts with.
func FromGGUF(tb testing.TB, f *gguf.File) *tokenizer.Tokenizer {
	tb.Helper()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// Open builds the tokenizer of the GGUF file at path, as the commands load
// it; the file is closed when tb's test ends.
func Open(tb testing.TB, path string) *tokenizer.Tokenizer {
	tb.Helper()
	return FromGGUF(tb, gguftest.Open(tb, path))
}
