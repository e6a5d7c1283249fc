package tokenizer

import (
	"sync"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
)

var (
	llama3Once sync.Once
	llama3Tok  *Tokenizer
	llama3KV   []gguf.KV
	llama3Err  error
)

// llama3 returns the Llama 3 tokenizer built from the shared tokenizer.json.
func llama3(tb testing.TB) *Tokenizer {
	tb.Helper()
	testdata.Llama3TokenizerJSON.Require(tb)
	testdata.Llama32Template.Require(tb)
	llama3Once.Do(func() {
		llama3KV, llama3Err = llama3vocab.Metadata()
		if llama3Err == nil {
			llama3Tok, llama3Err = FromKV(llama3KV)
		}
	})
	if llama3Err != nil {
		tb.Fatal(llama3Err)
	}
	return llama3Tok
}

// openGGUF opens a shared GGUF and builds its tokenizer.
func openGGUF(tb testing.TB, f testdata.File) *Tokenizer {
	tb.Helper()
	return openPath(tb, f.Require(tb))
}

// openPath builds the tokenizer of the GGUF at path.
func openPath(tb testing.TB, path string) *Tokenizer {
	tb.Helper()
	gf := gguftest.Open(tb, path)
	tok, err := FromGGUF(gf)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}
