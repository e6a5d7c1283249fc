package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sync"

	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

// An Embedder turns one token sequence into one embedding, pooled and
// normalized as the server was started (damascus serve --embeddings
// --pooling). It serializes its own calls.
type Embedder interface {
	Embed(tokens []int32) ([]float32, error)
	MaxTokens() int // the longest sequence Embed takes
}

// ContextEmbedder is the Embedder over a llama.Context of its own (the
// slots' caches stay untouched), one sequence at a time: the final hidden
// states pooled as Pooling says and scaled to unit length, as llama-server
// answers /v1/embeddings.
type ContextEmbedder struct {
	mu      sync.Mutex
	c       *llama.Context
	pooling llama.Pooling
	dim     int
}

// NewContextEmbedder embeds on c (which it then owns; the caller closes
// it) with pooling mean, cls or last: none gives a vector a token, which
// /v1/embeddings has no place for.
func NewContextEmbedder(c *llama.Context, m *llama.Model, pooling llama.Pooling) (*ContextEmbedder, error) {
	switch pooling {
	case llama.PoolMean, llama.PoolCLS, llama.PoolLast:
	default:
		return nil, fmt.Errorf("pooling %v gives no single vector an input: /v1/embeddings needs mean, cls or last", pooling)
	}
	return &ContextEmbedder{c: c, pooling: pooling, dim: m.Config.Dim}, nil
}

// Embed returns a new vector of the model's width.
func (e *ContextEmbedder) Embed(tokens []int32) ([]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, err := e.c.HiddenStates(tokens)
	if err != nil {
		return nil, err
	}
	return llama.Pool(make([]float32, 0, e.dim), h, len(tokens), e.dim, e.pooling, true), nil
}

// MaxTokens is the context's length.
func (e *ContextEmbedder) MaxTokens() int { return e.c.NCtx() }

// embeddings is POST /v1/embeddings, OpenAI's: input a string, an array of
// strings, an array of token ids or an array of such arrays; each input
// becomes one vector (strings tokenized with BOS, control tokens parsed,
// as llama-server does), floats or, with encoding_format "base64", their
// little-endian float32 bytes. dimensions (shortened vectors) is refused.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Embedder == nil {
		writeError(w, http.StatusNotImplemented, "not_supported_error", "",
			"this server does not compute embeddings: start it with --embeddings")
		return
	}
	var req struct {
		Input          json.RawMessage `json:"input"`
		EncodingFormat *string         `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
	}
	if aerr := s.decode(w, r, &req); aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	b64 := false
	if f := req.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			b64 = true
		default:
			writeError(w, http.StatusBadRequest, "invalid_request_error", "encoding_format", fmt.Sprintf("encoding_format %q: want \"float\" or \"base64\"", *f))
			return
		}
	}
	if req.Dimensions != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "dimensions", "dimensions: shortened embeddings are not provided; leave it out for the model's full width")
		return
	}
	inputs, aerr := s.embeddingInputs(req.Input)
	if aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	data := make([]map[string]any, len(inputs))
	total := 0
	for i, ids := range inputs {
		v, err := s.cfg.Embedder.Embed(ids)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "server_error", "", fmt.Sprintf("input %d: %v", i, err))
			return
		}
		var e any = v
		if b64 {
			buf := make([]byte, 4*len(v))
			for k, x := range v {
				binary.LittleEndian.PutUint32(buf[4*k:], math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": e}
		total += len(ids)
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": s.cfg.Model,
		"usage": map[string]int{"prompt_tokens": total, "total_tokens": total}})
}

// embeddingInputs reads input into token sequences, each checked against
// the vocabulary and the embedder's length.
func (s *Server) embeddingInputs(raw json.RawMessage) ([][]int32, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("input", "input: missing: a string, an array of strings, or token ids, is wanted")
	}
	// One form at a time: a failed json.Unmarshal may leave a slice part
	// filled, so each form decodes into its own variables.
	var texts []string
	var seqs [][]int32
	var one string
	var ids []int32
	var many [][]int32
	switch {
	case json.Unmarshal(raw, &one) == nil:
		texts = []string{one}
	case raw[0] == '[' && json.Unmarshal(raw, &ids) == nil:
		if len(ids) > 0 { // [] is an empty array of any form
			seqs = [][]int32{ids}
		}
	case raw[0] == '[' && json.Unmarshal(raw, &many) == nil:
		seqs = many
	default:
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, badRequest("input", "input: want a string, an array of strings, an array of token ids or an array of such arrays")
		}
		texts = list
	}
	if len(texts) == 0 && len(seqs) == 0 {
		return nil, badRequest("input", "input: an empty array: nothing to embed")
	}
	for i, t := range texts {
		enc, err := s.cfg.Tokenizer.Encode(t, tokenizer.AddSpecial|tokenizer.ParseSpecial)
		if err != nil {
			return nil, badRequest("input", "input %d cannot be tokenized: %v", i, err)
		}
		seqs = append(seqs, enc)
	}
	most := s.cfg.Embedder.MaxTokens()
	for i, q := range seqs {
		switch {
		case len(q) == 0:
			return nil, badRequest("input", "input %d is empty", i)
		case len(q) > most:
			return nil, badRequest("input", "input %d is %d tokens, more than the %d the server embeds at once (--ctx-size)", i, len(q), most)
		}
		if k, bad := s.outsideVocab(q); bad {
			return nil, badRequest("input", "input %d: token %d is outside the vocabulary of %d", i, q[k], s.cfg.Vocab)
		}
	}
	return seqs, nil
}

// outsideVocab finds the first id of ids outside the model's vocabulary.
func (s *Server) outsideVocab(ids []int32) (int, bool) {
	for i, id := range ids {
		if id < 0 || int(id) >= s.cfg.Vocab {
			return i, true
		}
	}
	return 0, false
}
