package serve

import (
	"net/http"
	"runtime/debug"

	"github.com/damascus-llm/damascus/model/sample"
)

// applyTemplate is llama-server's POST /apply-template: a chat request's
// messages (and tools) rendered as the model will read them, {"prompt":
// text}, BOS included where the vocabulary adds it, nothing generated.
func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	var req request
	if aerr := s.decode(w, r, &req); aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	text, aerr := s.chatPrompt(&req, &job{chat: true})
	if aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	if tok := s.cfg.Tokenizer; tok.AddBOS() {
		if bos, ok := tok.Text(tok.BOS()); ok {
			text = bos + text
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text})
}

// props is llama-server's GET /props, the fields this server has: its
// slots and their context, the sampling defaults, the chat template (its
// source and the format it is rendered in) and the special tokens.
func (s *Server) props(w http.ResponseWriter, r *http.Request) {
	tok := s.cfg.Tokenizer
	text := func(id int32) string {
		t, _ := tok.Text(id)
		return t
	}
	p := sample.DefaultParams()
	format := ""
	if s.cfg.Template != nil {
		format = s.cfg.Template.Name()
	}
	build := "damascus"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" && len(st.Value) >= 7 {
				build += " " + st.Value[:7]
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": s.eng.NCtx(), "params": map[string]any{
			"temperature": p.Temperature, "top_k": p.TopK, "top_p": p.TopP, "min_p": p.MinP,
			"repeat_penalty": p.RepeatPenalty, "frequency_penalty": p.FrequencyPenalty, "presence_penalty": p.PresencePenalty}},
		"total_slots":   s.eng.Seqs(),
		"model_alias":   s.cfg.Model,
		"chat_template": tok.ChatTemplate(),
		"chat_format":   format,
		"bos_token":     text(tok.BOS()),
		"eos_token":     text(tok.EOS()),
		"modalities":    map[string]bool{"vision": false, "audio": false},
		"build_info":    build,
	})
}
