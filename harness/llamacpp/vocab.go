package llamacpp

import (
	"fmt"
	"math"
)

// Vocab is llama.cpp's tokenizer for one GGUF vocabulary: the tokenizer oracle.
// Its methods are safe for concurrent use (llama.cpp's tokenization API is).
type Vocab struct {
	l     *lib
	h     uintptr // const struct llama_vocab *
	n     int32
	model *Model
	owner bool // Close frees the model (OpenVocab)
}

// VocabType is llama.cpp's enum llama_vocab_type.
type VocabType int32

// The vocabulary types of llama.cpp.
const (
	VocabNone VocabType = 0
	VocabSPM  VocabType = 1
	VocabBPE  VocabType = 2
	VocabWPM  VocabType = 3
	VocabUGM  VocabType = 4
	VocabRWKV VocabType = 5
)

// OpenVocab loads only the vocabulary of a GGUF file (vocab_only). Close frees it.
func OpenVocab(path string) (*Vocab, error) {
	m, err := OpenModel(path, ModelOptions{VocabOnly: true})
	if err != nil {
		return nil, err
	}
	v := m.vocab
	v.owner = true
	return v, nil
}

// Close frees a vocabulary opened with OpenVocab; for a model's vocabulary
// (Model.Vocab) it does nothing: close the model.
func (v *Vocab) Close() error {
	if v.owner {
		return v.model.Close()
	}
	return nil
}

// NTokens is the vocabulary size.
func (v *Vocab) NTokens() int { return int(v.n) }

// Type is the tokenizer kind (SPM, BPE, ...).
func (v *Vocab) Type() VocabType { return VocabType(v.l.llama.vocabType(v.h)) }

// BOS and EOS are the beginning- and end-of-sequence token ids (-1 if none).
func (v *Vocab) BOS() int32 { return v.l.llama.vocabBOS(v.h) }

// EOS is the end-of-sequence token id (-1 if none).
func (v *Vocab) EOS() int32 { return v.l.llama.vocabEOS(v.h) }

// AddsBOS reports whether the vocabulary asks for a BOS token (add_special).
func (v *Vocab) AddsBOS() bool { return v.l.llama.vocabGetAddBOS(v.h) }

// Tokenize encodes text with llama_tokenize. addSpecial adds BOS/EOS as the
// vocabulary asks; parseSpecial turns special-token text (e.g. "<s>") into
// their ids instead of plain text.
func (v *Vocab) Tokenize(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	if _, err := v.model.handle(); err != nil {
		return nil, err
	}
	if len(text) > math.MaxInt32 {
		return nil, fmt.Errorf("llama.cpp tokenize: text of %d bytes is too long", len(text))
	}
	buf := append([]byte(text), 0) // never empty, so &buf[0] is valid
	// Most tokens span several bytes; when this guess is short, llama.cpp
	// returns the count it needs as a negative number.
	toks := make([]int32, len(text)/3+8)
	for range 2 {
		n := v.l.llama.tokenize(v.h, &buf[0], int32(len(text)), &toks[0], int32(len(toks)), addSpecial, parseSpecial)
		switch {
		case n == math.MinInt32:
			return nil, fmt.Errorf("llama.cpp tokenize: token count overflows int32")
		case n < 0:
			// Negative: the count it needs. Resize and retry once.
			toks = make([]int32, -n)
			continue
		}
		return toks[:n], nil
	}
	return nil, fmt.Errorf("llama.cpp tokenize: buffer size negotiation failed")
}

// checkIDs rejects ids outside the vocabulary: llama.cpp would throw a C++
// exception across the C boundary and abort the process.
func (v *Vocab) checkIDs(ids []int32) error {
	for i, id := range ids {
		if id < 0 || id >= v.n {
			return fmt.Errorf("token %d (index %d) is outside the vocabulary of %d", id, i, v.n)
		}
	}
	return nil
}

// TokenToPiece returns the text of one token (llama_token_to_piece, no
// leading-space stripping); special renders control tokens like "<s>".
// The result may be a partial UTF-8 sequence (byte tokens).
func (v *Vocab) TokenToPiece(id int32, special bool) (string, error) {
	if _, err := v.model.handle(); err != nil {
		return "", err
	}
	if err := v.checkIDs([]int32{id}); err != nil {
		return "", fmt.Errorf("llama.cpp token_to_piece: %w", err)
	}
	buf := make([]byte, 32)
	for range 2 {
		n := v.l.llama.tokenToPiece(v.h, id, &buf[0], int32(len(buf)), 0, special)
		if n < 0 {
			buf = make([]byte, -n)
			continue
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("llama.cpp token_to_piece: buffer size negotiation failed")
}

// Detokenize decodes ids with llama_detokenize. removeSpecial drops a leading
// BOS / trailing EOS the vocabulary adds; unparseSpecial renders special tokens.
func (v *Vocab) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) (string, error) {
	if _, err := v.model.handle(); err != nil {
		return "", err
	}
	if err := v.checkIDs(ids); err != nil {
		return "", fmt.Errorf("llama.cpp detokenize: %w", err)
	}
	if len(ids) == 0 {
		return "", nil
	}
	buf := make([]byte, 8*len(ids)+16)
	for range 2 {
		n := v.l.llama.detokenize(v.h, &ids[0], int32(len(ids)), &buf[0], int32(len(buf)), removeSpecial, unparseSpecial)
		if n < 0 {
			buf = make([]byte, -n)
			continue
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("llama.cpp detokenize: buffer size negotiation failed")
}
