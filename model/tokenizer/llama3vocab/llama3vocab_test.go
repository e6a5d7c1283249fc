package llama3vocab

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestLoad(t *testing.T) {
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	v, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != NumTokens || len(v.TokenTypes) != NumTokens {
		t.Fatalf("%d tokens, %d types; want %d", len(v.Tokens), len(v.TokenTypes), NumTokens)
	}
	if len(v.Merges) != 280147 {
		t.Errorf("%d merges, want 280147", len(v.Merges))
	}
	for id, want := range map[int]string{
		0: "!", 220: "Ġ", 198: "Ċ", 128000: "<|begin_of_text|>", 128004: "<|finetune_right_pad_id|>",
		128008: "<|eom_id|>", 128009: "<|eot_id|>", 128010: "<|python_tag|>",
		128011: "<|reserved_special_token_3|>", 128255: "<|reserved_special_token_247|>",
	} {
		if v.Tokens[id] != want {
			t.Errorf("token %d = %q, want %q", id, v.Tokens[id], want)
		}
	}
	if v.TokenTypes[127999] != tokenNormal || v.TokenTypes[128000] != tokenCtrl {
		t.Errorf("token types at the base/special boundary: %d, %d", v.TokenTypes[127999], v.TokenTypes[128000])
	}
	if v.Merges[0] != "Ġ Ġ" {
		t.Errorf("first merge %q", v.Merges[0])
	}
	seen := make(map[string]bool, len(v.Tokens))
	for id, tok := range v.Tokens {
		if tok == "" || seen[tok] {
			t.Fatalf("token %d: empty or duplicate %q", id, tok)
		}
		seen[tok] = true
	}
	md := v.Metadata()
	if md[0].Key != "tokenizer.ggml.model" || md[len(md)-1].Key != "tokenizer.chat_template" {
		t.Errorf("metadata order: first %s, last %s", md[0].Key, md[len(md)-1].Key)
	}
}

func TestWriteVocabGGUF(t *testing.T) {
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	if err := WriteVocabGGUF(path); err != nil {
		t.Fatal(err)
	}
	f := gguftest.Open(t, path)
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != NumTokens || toks[128009] != "<|eot_id|>" {
		t.Fatalf("tokens: %d, err %v", len(toks), err)
	}
	if eos, err := f.Uint32("tokenizer.ggml.eos_token_id"); err != nil || eos != EOT {
		t.Errorf("eos = %d, %v", eos, err)
	}
	if pre, err := f.String("tokenizer.ggml.pre"); err != nil || pre != Pre {
		t.Errorf("pre = %q, %v", pre, err)
	}
}

// TestFallbackToNPM checks Load without the shared test data: it takes the
// npm copy `make baseline` installs (the same vocabulary as the shared
// tokenizer.json.gz, with the package's own chat template), or, where that
// is missing too, fails naming both places.
func TestFallbackToNPM(t *testing.T) {
	var shared *Vocab
	if testdata.Llama3TokenizerJSON.Path() != "" && testdata.Llama32Template.Path() != "" {
		v, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		shared = v
	}
	t.Setenv(testdata.EnvVar, t.TempDir()) // no shared files there
	v, err := Load()
	if _, statErr := os.Stat(filepath.Join(npmModels(), "tokenizer.json")); statErr != nil {
		if err == nil || !strings.Contains(err.Error(), "npm copy") || !strings.Contains(err.Error(), "make baseline") {
			t.Fatalf("without shared data or the npm copy: err = %v, want one naming both", err)
		}
		t.Skipf("npm copy not installed (make baseline): %v", statErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Source, npmPackage) {
		t.Errorf("Source = %q, want the npm package named", v.Source)
	}
	if len(v.Tokens) != NumTokens || len(v.Merges) != 280147 || v.ChatTemplate == "" {
		t.Fatalf("npm copy: %d tokens, %d merges, template %d bytes", len(v.Tokens), len(v.Merges), len(v.ChatTemplate))
	}
	if shared != nil {
		if !slices.Equal(v.Tokens, shared.Tokens) || !slices.Equal(v.Merges, shared.Merges) || !slices.Equal(v.TokenTypes, shared.TokenTypes) {
			t.Error("the npm copy's vocabulary differs from the shared tokenizer.json.gz")
		}
	}
}
