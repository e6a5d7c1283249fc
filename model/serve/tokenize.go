package serve

import (
	"net/http"
	"unicode/utf8"

	"github.com/damascus-llm/damascus/model/tokenizer"
)

// tokenize is llama-server's POST /tokenize: {"content": text} to
// {"tokens": [ids]}; add_special adds BOS/EOS as the vocabulary asks
// (default false), parse_special reads control tokens' text as those
// tokens (default true), with_pieces gives each id with its piece (a
// string, or its bytes where they are not whole UTF-8).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial *bool   `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}
	if aerr := s.decode(w, r, &req); aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	if req.Content == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "content", "content: missing: the text to tokenize is wanted")
		return
	}
	var flags tokenizer.EncodeFlags
	if req.AddSpecial {
		flags |= tokenizer.AddSpecial
	}
	if req.ParseSpecial == nil || *req.ParseSpecial {
		flags |= tokenizer.ParseSpecial
	}
	tok := s.cfg.Tokenizer
	ids, err := tok.Encode(*req.Content, flags)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "content", "content cannot be tokenized: "+err.Error())
		return
	}
	if !req.WithPieces {
		if ids == nil {
			ids = []int32{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		p, _ := tok.Piece(id, true)
		var piece any = p
		if !utf8.ValidString(p) {
			b := make([]int, len(p))
			for k := range len(p) {
				b[k] = int(p[k])
			}
			piece = b
		}
		out[i] = map[string]any{"id": id, "piece": piece}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// detokenize is llama-server's POST /detokenize: {"tokens": [ids]} to
// {"content": text}, control tokens printed. An id outside the vocabulary
// is a 400.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int32 `json:"tokens"`
	}
	if aerr := s.decode(w, r, &req); aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	text, err := s.cfg.Tokenizer.Detokenize(req.Tokens, false, true)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "tokens", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": string(text)})
}
