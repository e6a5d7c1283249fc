package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// nativeRequest is llama-server's POST /completion body, the fields this
// server provides; others it would have to ignore silently are refused.
type nativeRequest struct {
	Prompt   json.RawMessage `json:"prompt"` // a string, or token ids
	NPredict *int            `json:"n_predict"`
	sampling
	RepeatPenalty *float32        `json:"repeat_penalty"`
	RepeatLastN   *int            `json:"repeat_last_n"`
	JSONSchema    json.RawMessage `json:"json_schema"`
	CachePrompt   *bool           `json:"cache_prompt"` // always: a slot keeps its prefix
	NProbs        *int            `json:"n_probs"`
}

// nativeCompletion is llama-server's POST /completion: {"content", "stop":
// true, "tokens_predicted", "tokens_evaluated", "stop_type", "timings", …};
// streamed, events {"content": delta, "stop": false} and a last one with
// "stop": true and the rest (no [DONE]).
func (s *Server) nativeCompletion(w http.ResponseWriter, r *http.Request) {
	var nr nativeRequest
	if aerr := s.decode(w, r, &nr); aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	j, aerr := s.nativeJob(&nr)
	if aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	s.queued(w, r, func() { s.runNative(w, r, j) })
}

// nativeJob maps a /completion request onto a completion request's job.
func (s *Server) nativeJob(nr *nativeRequest) (*job, *apiError) {
	switch {
	case nr.NProbs != nil && *nr.NProbs > 0:
		return nil, badRequest("n_probs", "n_probs: this server gives log-probabilities on /v1/completions (logprobs)")
	}
	req := request{Prompt: nr.Prompt, sampling: nr.sampling}
	if t := bytes.TrimSpace(nr.Prompt); len(t) > 0 && t[0] == '[' {
		var ids []int32
		if err := json.Unmarshal(t, &ids); err != nil {
			return nil, badRequest("prompt", "prompt: a string or an array of token ids is wanted")
		}
		if i, bad := s.outsideVocab(ids); bad {
			return nil, badRequest("prompt", "prompt[%d]: token %d is outside the vocabulary (0 to %d)", i, ids[i], s.cfg.Vocab-1)
		}
		if len(ids) == 0 {
			return nil, badRequest("prompt", "prompt: no tokens")
		}
		req.promptIDs = ids
	}
	if n := nr.NPredict; n != nil && *n >= 0 {
		if *n == 0 {
			return nil, badRequest("n_predict", "n_predict 0: nothing to generate")
		}
		req.MaxTokens = n
	}
	if len(bytes.TrimSpace(nr.JSONSchema)) > 0 && string(bytes.TrimSpace(nr.JSONSchema)) != "null" {
		rf := &responseFormat{Type: "json_schema"}
		rf.JSONSchema = &struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		}{Schema: nr.JSONSchema}
		req.ResponseFormat = rf
	}
	j, aerr := s.parseRequest(&req, false)
	if aerr != nil {
		return nil, aerr
	}
	// llama-server's own defaults: the repeat penalty over the last 64.
	if nr.RepeatPenalty != nil {
		j.params.RepeatPenalty = *nr.RepeatPenalty
	}
	if nr.RepeatLastN != nil {
		j.params.PenaltyLastN = *nr.RepeatLastN
	}
	if err := j.params.Validate(); err != nil {
		return nil, badRequest("", "%v", err)
	}
	return j, nil
}

// runNative answers a /completion job.
func (s *Server) runNative(w http.ResponseWriter, r *http.Request, j *job) {
	smp, err := s.sampler(j)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	event := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	if j.stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
	t := &task{job: j, ctx: r.Context(), sampler: smp, notify: make(chan struct{}, 1)}
	s.sched.submit(t)
	var text strings.Builder
	for {
		<-t.notify
		delta, _, done := t.take()
		if j.stream && delta != "" {
			event(map[string]any{"content": delta, "stop": false})
		} else {
			text.WriteString(delta)
		}
		if done {
			break
		}
	}
	st := t.stats
	switch {
	case t.err != nil && j.stream:
		event(map[string]any{"error": map[string]any{"message": t.err.Error(), "type": "server_error"}})
		return
	case t.err != nil:
		writeError(w, http.StatusInternalServerError, "server_error", "", t.err.Error())
		return
	case st.Reason == "cancelled":
		return
	}
	stopType := map[string]string{"length": "limit", "stop token": "eos", "stop string": "word"}[st.Reason]
	final := map[string]any{"content": text.String(), "stop": true, "model": s.cfg.Model,
		"tokens_predicted": len(st.Generated), "tokens_evaluated": len(j.prompt), "stop_type": stopType,
		"truncated": false, "timings": t.timings(len(st.Generated))}
	if j.stream {
		event(final)
		return
	}
	writeJSON(w, http.StatusOK, final)
}
