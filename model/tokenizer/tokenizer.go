// Package tokenizer turns text into token ids and back exactly as llama.cpp
// does for the vocabularies the engine supports: SentencePiece-style BPE
// (tokenizer.ggml.model = "llama": Llama 2, TinyLlama, stories260K) and
// byte-level BPE (tokenizer.ggml.model = "gpt2") with a registered
// pre-tokenizer (tokenizer.ggml.pre = "llama-bpe" for Llama 3.x).
//
// Exactness is the point: one different id changes every later activation,
// so every rule here — merge order, byte fallback, the leading space, special
// tokens, invalid UTF-8 — follows llama.cpp's src/llama-vocab.cpp and
// src/unicode.cpp, and the tests compare against the pinned llama.cpp.
package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// TokenType is a token's type as GGUF stores it (tokenizer.ggml.token_type,
// llama.h's llama_token_type).
type TokenType int32

// The token types.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// attr is llama.cpp's llama_token_attr bit set, derived from the type and
// adjusted by the same name-based rules llama.cpp applies at load time.
type attr uint16

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
)

// typeAttrs pairs each token type with its attribute, in the order Type
// tests the attributes (the first attribute a token has gives its type).
var typeAttrs = [...]struct {
	typ  TokenType
	attr attr
}{
	{TypeUnused, attrUnused},
	{TypeUnknown, attrUnknown},
	{TypeControl, attrControl},
	{TypeUserDefined, attrUserDefined},
	{TypeByte, attrByte},
	{TypeNormal, attrNormal},
}

func attrOf(t TokenType) attr {
	for _, ta := range typeAttrs {
		if ta.typ == t {
			return ta.attr
		}
	}
	return 0
}

// Kind is the tokenizer algorithm.
type Kind int

// The supported algorithms.
const (
	SPM Kind = iota + 1 // SentencePiece-style BPE over scores (tokenizer.ggml.model = "llama")
	BPE                 // byte-level BPE over ranked merges (tokenizer.ggml.model = "gpt2")
)

func (k Kind) String() string {
	switch k {
	case SPM:
		return "SPM"
	case BPE:
		return "BPE"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// NoToken marks an absent special token.
const NoToken int32 = -1

// Spec is a vocabulary as GGUF metadata describes it. Optional settings are
// pointers: nil means "absent", and llama.cpp's default for the model applies.
type Spec struct {
	Model  string // tokenizer.ggml.model: "llama" or "gpt2"
	Pre    string // tokenizer.ggml.pre (byte-level BPE only)
	Tokens []string
	Scores []float32   // optional
	Types  []TokenType // optional; all normal when nil
	Merges []string    // byte-level BPE only: "left right", rank = index

	BOS, EOS, EOT, EOM, UNK, PAD *uint32 // optional special ids

	AddBOS, AddEOS, AddSpacePrefix *bool // optional flags

	// Pretokenizer overrides the registered pre-tokenizer for Pre (used to
	// compare implementations); nil selects the registered one.
	Pretokenizer Pretokenizer

	ChatTemplate string
}

// Tokenizer encodes and decodes text. It is safe for concurrent use.
type Tokenizer struct {
	kind   Kind
	pre    Pretokenizer // BPE only
	pieces []string     // token texts as stored
	scores []float32
	attrs  []attr

	textToID map[string]int32 // token text → id (SPM lookups, byte fallback)

	bos, eos, eot, eom, unk, pad int32
	addBOS, addEOS               bool
	addSpacePrefix               bool
	ignoreMerges                 bool
	cleanSpaces                  bool
	eog                          map[int32]bool

	specials []int32 // control, user-defined and unknown tokens, longest text first

	bpe               *bpeModel  // BPE only
	byteTokens        [256]int32 // SPM only: the token for each byte, or NoToken
	spmSplitAtSpace   bool       // SPM only: see spmFragment
	spmSplitAtNewline bool       // SPM only: see spmFragment

	decoded []string // token_to_piece(id, special = true) for every id

	chatTemplate string
}

// Errors a caller may want to tell apart.
var (
	ErrUnsupported = errors.New("unsupported tokenizer")
	ErrInvalid     = errors.New("invalid tokenizer metadata")
)

// New builds a tokenizer from spec, applying llama.cpp's load-time rules.
func New(spec Spec) (*Tokenizer, error) {
	n := len(spec.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrInvalid)
	}
	if spec.Scores != nil && len(spec.Scores) < n {
		return nil, fmt.Errorf("%w: %d scores for %d tokens", ErrInvalid, len(spec.Scores), n)
	}
	if spec.Types != nil && len(spec.Types) < n {
		return nil, fmt.Errorf("%w: %d token types for %d tokens", ErrInvalid, len(spec.Types), n)
	}
	t := &Tokenizer{
		pieces:       make([]string, n),
		scores:       make([]float32, n),
		attrs:        make([]attr, n),
		textToID:     make(map[string]int32, n),
		eot:          NoToken,
		eom:          NoToken,
		pad:          NoToken,
		chatTemplate: spec.ChatTemplate,
	}
	switch spec.Model {
	case "llama":
		t.kind = SPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addSpacePrefix, t.addBOS = true, true
	case "gpt2":
		t.kind = BPE
		t.bos, t.eos, t.unk = 11, 11, NoToken
		t.cleanSpaces = true
		pre := spec.Pretokenizer
		if pre == nil {
			var err error
			if pre, err = LookupPretokenizer(spec.Pre); err != nil {
				return nil, err
			}
		}
		t.pre = pre
		opts := pre.Options()
		t.ignoreMerges = opts.IgnoreMerges
		t.addBOS = opts.AddBOS
		t.cleanSpaces = opts.CleanSpaces
	case "":
		return nil, fmt.Errorf("%w: tokenizer.ggml.model missing", ErrInvalid)
	default:
		return nil, fmt.Errorf("%w: tokenizer model %q (supported: llama, gpt2)", ErrUnsupported, spec.Model)
	}
	if spec.AddSpacePrefix != nil {
		t.addSpacePrefix = *spec.AddSpacePrefix
	}

	for i, text := range spec.Tokens {
		if text == "" {
			text = fmt.Sprintf("[EMPTY_%d]", i) // as llama.cpp renames empty tokens
		}
		if prev, dup := t.textToID[text]; dup {
			return nil, fmt.Errorf("%w: duplicate token %q (ids %d and %d)", ErrInvalid, text, prev, i)
		}
		t.textToID[text] = int32(i)
		t.pieces[i] = text
		if spec.Scores != nil {
			t.scores[i] = spec.Scores[i]
		}
		t.attrs[i] = attrNormal
		if spec.Types != nil {
			t.attrs[i] = attrOf(spec.Types[i])
		}
	}

	if t.kind == SPM {
		t.findByteTokens()
		t.spmSplitAtSpace, t.spmSplitAtNewline = t.spmSplittable()
	}
	if t.kind == BPE {
		m, err := newBPEModel(t, spec.Merges)
		if err != nil {
			return nil, err
		}
		t.bpe = m
	}

	// Special ids: the metadata overrides the model's default when in range;
	// a default out of range is dropped.
	for _, s := range []struct {
		id  *int32
		key *uint32
	}{{&t.bos, spec.BOS}, {&t.eos, spec.EOS}, {&t.eot, spec.EOT}, {&t.eom, spec.EOM}, {&t.unk, spec.UNK}, {&t.pad, spec.PAD}} {
		if *s.id >= int32(n) {
			*s.id = NoToken
		}
		if s.key != nil && *s.key < uint32(n) {
			*s.id = int32(*s.key)
		}
	}
	if spec.AddBOS != nil {
		t.addBOS = *spec.AddBOS
	}
	if spec.AddEOS != nil {
		t.addEOS = *spec.AddEOS
	}
	if t.addBOS && t.bos == NoToken {
		return nil, fmt.Errorf("%w: add_bos_token is true, but bos_token_id is not set", ErrInvalid)
	}
	if t.addEOS && t.eos == NoToken {
		return nil, fmt.Errorf("%w: add_eos_token is true, but eos_token_id is not set", ErrInvalid)
	}
	t.applyNameRules()

	for id, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.specials = append(t.specials, int32(id))
		}
	}
	sort.SliceStable(t.specials, func(i, j int) bool {
		return len(t.pieces[t.specials[i]]) > len(t.pieces[t.specials[j]])
	})

	t.decoded = make([]string, n)
	for id := range t.decoded {
		t.decoded[id] = string(t.piece(int32(id), true))
	}
	return t, nil
}

// eogNames are the texts llama.cpp treats as end-of-generation tokens (and
// forces to control type).
var eogNames = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~[",
}

var eotNames = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
	"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
}

// applyNameRules repeats llama.cpp's load-time detection of EOT/EOM/EOG
// tokens by their text, which also forces those tokens to control type (and
// so changes how text containing them is split), and marks control tokens
// named "unused" as unused.
func (t *Tokenizer) applyNameRules() {
	makeControl := func(id int32) { t.attrs[id] |= attrControl }
	if t.eot == NoToken {
		// llama.cpp walks an unordered map, so with several candidates the
		// choice is unspecified; the vocabularies we support have at most one.
		for _, name := range eotNames {
			if id, ok := t.textToID[name]; ok {
				t.eot = id
				makeControl(id)
				break
			}
		}
	}
	if t.eom == NoToken {
		if id, ok := t.textToID["<|eom_id|>"]; ok {
			t.eom = id
			makeControl(id)
		}
	}
	for id, a := range t.attrs {
		if a&attrControl != 0 && a&attrUnused == 0 && strings.Contains(t.pieces[id], "unused") {
			t.attrs[id] |= attrUnused
		}
	}
	t.eog = map[int32]bool{}
	for _, name := range eogNames {
		if id, ok := t.textToID[name]; ok {
			t.eog[id] = true
			makeControl(id)
		}
	}
	for _, name := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.textToID[name]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != NoToken {
			t.eog[id] = true
		}
	}
}

// Kind returns the tokenizer algorithm.
func (t *Tokenizer) Kind() Kind { return t.kind }

// Pretokenizer returns the byte-level BPE pre-tokenizer (nil for SPM).
func (t *Tokenizer) Pretokenizer() Pretokenizer { return t.pre }

// NumTokens returns the vocabulary size.
func (t *Tokenizer) NumTokens() int { return len(t.pieces) }

// BOS returns the beginning-of-sequence id, or NoToken.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence id, or NoToken.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT returns the end-of-turn id, or NoToken.
func (t *Tokenizer) EOT() int32 { return t.eot }

// AddBOS reports whether Encode with AddSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with AddSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the other
// end-of-generation tokens llama.cpp recognises by name).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// Text returns the token's text as stored in the vocabulary.
func (t *Tokenizer) Text(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.pieces) {
		return "", false
	}
	return t.pieces[id], true
}

// ID returns the id of the token whose stored text is text.
func (t *Tokenizer) ID(text string) (int32, bool) {
	id, ok := t.textToID[text]
	return id, ok
}

// Type returns the token's type after llama.cpp's load-time adjustments.
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.attrs) {
		return TypeUndefined
	}
	a := t.attrs[id]
	for _, ta := range typeAttrs {
		if a&ta.attr != 0 {
			return ta.typ
		}
	}
	return TypeUndefined
}

// ChatTemplate returns tokenizer.chat_template ("" when absent).
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }
