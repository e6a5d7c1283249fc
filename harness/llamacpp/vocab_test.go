package llamacpp

import (
	"reflect"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

// openVocab opens file's vocabulary in llama.cpp, closed when the test
// ends; the test is skipped where the pinned llama.cpp is not installed.
func openVocab(t *testing.T, file testdata.File) *Vocab {
	t.Helper()
	requireLib(t)
	v, err := OpenVocab(file.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func TestTokenizeStories260K(t *testing.T) {
	v := openVocab(t, testdata.Stories260KGGUF)
	if v.NTokens() != 512 || v.Type() != VocabSPM || v.BOS() != 1 || v.EOS() != 2 {
		t.Errorf("vocab: %d tokens, type %d, BOS %d, EOS %d; want 512, SPM, 1, 2", v.NTokens(), v.Type(), v.BOS(), v.EOS())
	}
	got, err := v.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 403, 407, 261, 378}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tokenize with BOS = %v, want %v", got, want)
	}
	noBOS, err := v.Tokenize("Once upon a time", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(noBOS, got[1:]) {
		t.Errorf("Tokenize without BOS = %v, want %v", noBOS, got[1:])
	}
	// llama.cpp strips the SPM space prefix only when no BOS was removed
	// (llama_vocab::impl::detokenize): both behaviours are the oracle's.
	text, err := v.Detokenize(got, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if text != " Once upon a time" {
		t.Errorf("Detokenize(with BOS, removeSpecial) = %q, want %q", text, " Once upon a time")
	}
	if text, err := v.Detokenize(got[1:], false, false); err != nil || text != "Once upon a time" {
		t.Errorf("Detokenize(no BOS) = %q, %v; want %q", text, err, "Once upon a time")
	}
	if text, err := v.Detokenize(got, false, true); err != nil || text != "<s> Once upon a time" {
		t.Errorf("Detokenize(unparseSpecial) = %q, %v; want %q", text, err, "<s> Once upon a time")
	}
	if p, err := v.TokenToPiece(1, true); err != nil || p != "<s>" {
		t.Errorf("TokenToPiece(BOS, special) = %q, %v; want \"<s>\"", p, err)
	}
	if _, err := v.Detokenize([]int32{5, 512}, false, false); err == nil {
		t.Error("Detokenize accepted token 512 of a 512-token vocabulary")
	}
	if _, err := v.TokenToPiece(-1, false); err == nil {
		t.Error("TokenToPiece accepted -1")
	}
	if toks, err := v.Tokenize("", false, false); err != nil || len(toks) != 0 {
		t.Errorf("Tokenize(\"\") = %v, %v", toks, err)
	}
}

func TestTokenizeLlama2VocabOnly(t *testing.T) {
	v := openVocab(t, testdata.Llama2VocabGGUF)
	if v.NTokens() != 32000 || v.Type() != VocabSPM {
		t.Fatalf("vocab: %d tokens, type %d; want 32000 SPM", v.NTokens(), v.Type())
	}
	// A long text exercises the negative-return resize path: byte-fallback
	// characters take a token per byte, more than Tokenize's first guess.
	long := ""
	for range 300 {
		long += "héllo wörld 🙂\n\t"
	}
	toks, err := v.Tokenize(long, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if toks[0] != 1 || len(toks) < 300 {
		t.Fatalf("Tokenize(long) = %d tokens starting %v", len(toks), toks[:min(5, len(toks))])
	}
	back, err := v.Detokenize(toks[1:], false, false)
	if err != nil {
		t.Fatal(err)
	}
	if back != long {
		t.Errorf("round trip changed the text: %q... vs %q...", back[:40], long[:40])
	}
	// parseSpecial turns "<s>" into the BOS id; without it, it is text.
	sp, err := v.Tokenize("<s>hi", false, true)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := v.Tokenize("<s>hi", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if sp[0] != 1 || plain[0] == 1 {
		t.Errorf("parseSpecial: %v; plain: %v", sp, plain)
	}
}
