// Package serve is an OpenAI-compatible HTTP server over one model context:
// POST /v1/chat/completions (messages through the model's chat template),
// POST /v1/completions, GET /v1/models and GET /health, with server-sent
// events for stream: true, log-probabilities, logit bias, JSON mode and tool
// calls (Llama 3.1/3.2 templates, tools.go); and llama-server's GET
// /metrics, POST /tokenize, POST /detokenize, POST /apply-template, GET
// /props and POST /completion (native.go). Requests take one of N slots (a bounded queue in front of them);
// a scheduler (schedule.go) runs every slot's next tokens in one step of the
// model, new requests joining between steps, each reusing the KV cache
// prefix it shares with its slot's previous request.
package serve

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/damascus-llm/damascus/model/grammar"
	"github.com/damascus-llm/damascus/model/jsonmode"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/llama/chat"
	"github.com/damascus-llm/damascus/model/llama/generate"
	"github.com/damascus-llm/damascus/model/sample"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

// Evaluator is a one-slot model context the server can drive (a *llama.Context).
type Evaluator interface {
	generate.Evaluator
	Truncate(n int) error
}

// Slots are sequences stepped together (a *llama.Batch): the server's slots.
type Slots interface {
	Seqs() int
	NCtx() int   // positions of each sequence
	NBatch() int // most tokens a step takes
	Pos(seq int) int
	Truncate(seq, n int) error
	Step(spans []llama.Span) ([]float32, error)
}

// Config is what the server serves and its limits.
type Config struct {
	Model     string    // the name clients pass as "model"
	Vocab     int       // the model's logits per token
	Context   Evaluator // one slot: requests take this context in turn
	Batch     Slots     // or N slots decoding together (instead of Context)
	Tokenizer *tokenizer.Tokenizer
	Template  chat.Template    // nil: /v1/chat/completions answers 400
	Embedder  Embedder         // nil: /v1/embeddings answers 501 (damascus serve --embeddings)
	MaxQueue  int              // requests waiting for a slot beyond the running ones; more get 503
	MaxBody   int64            // request body bytes; more get 413
	Now       func() time.Time // the clock ("created" fields, the Llama 3.2 template's date); nil: time.Now
	// APIKeys, when any is set, are the bearer tokens a request must carry
	// (Authorization: Bearer KEY), llama-server's --api-key; GET /health and
	// GET /v1/models stay open.
	APIKeys []string
	// AllowOrigins are the web origins whose pages may call the server
	// (CORS: "https://host:port" items, or "*" for any); none: no CORS
	// headers, so browsers keep other origins' pages out.
	AllowOrigins []string
}

// Server handles the endpoints. Its zero value is not usable: use New.
type Server struct {
	cfg     Config
	eng     Slots
	slot    chan struct{} // a token per request holding a slot (the scheduler has room for each)
	waiting atomic.Int64  // requests holding or waiting for a slot
	nextID  atomic.Int64
	sched   scheduler
	metrics metrics
	// jsonTable is the vocabulary as JSON mode reads it, made by the
	// first request that asks for it.
	jsonOnce  sync.Once
	jsonTable *jsonmode.Table
	// grammarTable is the vocabulary as a GBNF constraint reads it, made
	// by the first request with a grammar.
	grammarOnce  sync.Once
	grammarTable *grammar.Table
}

// New returns a server over cfg.Context or cfg.Batch.
func New(cfg Config) (*Server, error) {
	if (cfg.Context == nil) == (cfg.Batch == nil) || cfg.Tokenizer == nil || cfg.Vocab <= 0 {
		return nil, errors.New("serve: a context or a batch (one of them), a tokenizer and the vocabulary size are needed")
	}
	eng := cfg.Batch
	if eng == nil {
		eng = oneSlot{cfg.Context}
	}
	if eng.Seqs() < 1 || eng.NBatch() < 1 {
		return nil, fmt.Errorf("serve: %d slots taking %d tokens a step", eng.Seqs(), eng.NBatch())
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.MaxQueue < 0 {
		cfg.MaxQueue = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Template != nil {
		cfg.Template = chat.WithClock(cfg.Template, cfg.Now) // the Llama 3.2 system turn's date
	}
	for i, k := range cfg.APIKeys {
		if k == "" || strings.TrimSpace(k) != k {
			return nil, fmt.Errorf("serve: API key %d is empty or has white space around it", i+1)
		}
	}
	s := &Server{cfg: cfg, eng: eng, slot: make(chan struct{}, eng.Seqs())}
	s.sched.init(s)
	return s, nil
}

// Listening is a Server answering HTTP on a TCP address.
type Listening struct {
	HTTP *http.Server // Shutdown or Close stops it
	Addr net.Addr     // where it listens
	Done <-chan error // Serve's error once it stops (http.ErrServerClosed when stopped)
}

// Listen serves s over HTTP on addr (host:port; port 0: a free one, then in
// Addr) in the background.
func (s *Server) Listen(addr string) (*Listening, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	return &Listening{HTTP: hs, Addr: ln.Addr(), Done: done}, nil
}

// Handler routes the endpoints, behind the API keys if any, answering
// the allowed origins' CORS preflights.
func (s *Server) Handler() http.Handler {
	mux := s.routes()
	if len(s.cfg.APIKeys) == 0 && len(s.cfg.AllowOrigins) == 0 {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cors(w, r) {
			return // a preflight, answered
		}
		open := r.Method == http.MethodGet && (r.URL.Path == "/health" || r.URL.Path == "/v1/models")
		if len(s.cfg.APIKeys) > 0 && !open && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized, "authentication_error", "", "invalid or missing API key: send Authorization: Bearer KEY")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// cors sets the CORS headers for a request from an allowed origin and says
// whether it was a preflight (OPTIONS with Access-Control-Request-Method),
// which it answers: 204 from an allowed origin, 403 from another.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if origin == "" || len(s.cfg.AllowOrigins) == 0 {
		return false
	}
	allowed := slices.Contains(s.cfg.AllowOrigins, "*") || slices.Contains(s.cfg.AllowOrigins, origin)
	if !allowed {
		if preflight {
			writeError(w, http.StatusForbidden, "invalid_request_error", "", fmt.Sprintf("origin %s is not allowed (damascus serve --allow-origin)", origin))
		}
		return preflight
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if !preflight {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// authorized says r carries one of the API keys, compared in constant time.
func (s *Server) authorized(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	match := 0
	for _, k := range s.cfg.APIKeys {
		match |= subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(k))
	}
	return match == 1
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
			{"id": s.cfg.Model, "object": "model", "created": s.cfg.Now().Unix(), "owned_by": "damascus"}}})
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	mux.HandleFunc("GET /metrics", s.metricsPage)
	mux.HandleFunc("POST /tokenize", s.tokenize)
	mux.HandleFunc("POST /detokenize", s.detokenize)
	mux.HandleFunc("POST /apply-template", s.applyTemplate)
	mux.HandleFunc("GET /props", s.props)
	mux.HandleFunc("POST /completion", s.nativeCompletion)
	mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", "", fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// request is the body of both completion endpoints. Fields that would
// change the answer in ways this server does not provide (several choices,
// tools where the chat template has none, a JSON schema outside jsonmode's
// subset, echo) are refused with an error naming them rather than ignored;
// other unknown fields are ignored.
type request struct {
	Model         string          `json:"model"`
	Messages      []message       `json:"messages"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	MaxCompletion *int            `json:"max_completion_tokens"`
	sampling
	// Logprobs is a bool on /v1/chat/completions (with TopLogprobs
	// alternatives), a count of alternatives on /v1/completions.
	Logprobs      json.RawMessage    `json:"logprobs"`
	TopLogprobs   *int               `json:"top_logprobs"`
	LogitBias     map[string]float64 `json:"logit_bias"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools      json.RawMessage `json:"tools"` // tools.go
	ToolChoice json.RawMessage `json:"tool_choice"`
	// Asked for, not provided: refused unless absent or neutral.
	N            *int            `json:"n"`
	BestOf       *int            `json:"best_of"`
	Echo         *bool           `json:"echo"`
	Suffix       *string         `json:"suffix"`
	Functions    json.RawMessage `json:"functions"`
	FunctionCall json.RawMessage `json:"function_call"`
	// promptIDs is /completion's prompt given as token ids (native.go).
	promptIDs []int32

	ResponseFormat *responseFormat `json:"response_format"`
}

// sampling are the fields OpenAI's endpoints and llama-server's
// /completion name alike.
type sampling struct {
	Temperature      *float32        `json:"temperature"`
	TopP             *float32        `json:"top_p"`
	TopK             *int            `json:"top_k"`
	MinP             *float32        `json:"min_p"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	Stream           bool            `json:"stream"`
	Grammar          *string         `json:"grammar"` // GBNF, as llama-server takes it on every endpoint
	FrequencyPenalty *float32        `json:"frequency_penalty"`
	PresencePenalty  *float32        `json:"presence_penalty"`
}

// responseFormat is a request's response_format.
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

type message struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// apiError is an answer other than 200: its status and the OpenAI error
// object's fields.
type apiError struct {
	status      int
	kind, param string
	msg         string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: "invalid_request_error", param: param, msg: fmt.Sprintf(format, a...)}
}

// job is a validated request: the prompt's tokens and how to sample.
type job struct {
	chat   bool
	prompt []int32
	params sample.Params
	max    int
	stops  []string
	stream bool
	// logprobs says each generated token's log-probability is reported,
	// with top alternatives; usageChunk that a stream ends with a chunk of
	// the usage alone (stream_options.include_usage).
	logprobs   bool
	top        int
	usageChunk bool
	// json constrains the answer to one JSON object
	// (response_format {"type": "json_object"}), or with schema to a text
	// valid under it ("json_schema") or under one of its schemas (a
	// required call: one schema a tool).
	json   bool
	schema jsonmode.Union
	// grammar constrains the answer to the texts a GBNF grammar derives
	// (llama-server's "grammar").
	grammar *grammar.Grammar
	// tools are the functions offered (tools.go); mustCall says the answer
	// is constrained to a call of one of them.
	tools    []tool
	mustCall bool
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, isChat bool) {
	j, aerr := s.parse(w, r, isChat)
	if aerr != nil {
		writeError(w, aerr.status, aerr.kind, aerr.param, aerr.msg)
		return
	}
	s.queued(w, r, func() { s.run(w, r.Context(), j) })
}

// queued runs answer once the request holds a slot: beyond MaxQueue
// waiting it is refused (503) rather than piled up.
func (s *Server) queued(w http.ResponseWriter, r *http.Request, answer func()) {
	if s.waiting.Add(1) > int64(s.cfg.MaxQueue)+int64(cap(s.slot)) {
		s.waiting.Add(-1)
		writeError(w, http.StatusServiceUnavailable, "server_error", "", fmt.Sprintf("server busy: %d requests are waiting for the model; try again later", s.cfg.MaxQueue))
		return
	}
	select {
	case s.slot <- struct{}{}:
	case <-r.Context().Done():
		s.waiting.Add(-1)
		return // the client left while queued
	}
	defer func() { <-s.slot; s.waiting.Add(-1) }()
	answer()
}

// decode reads a JSON request body into v, at most Config.MaxBody bytes.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	err := json.NewDecoder(body).Decode(v)
	if err == nil {
		return nil
	}
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var synErr *json.SyntaxError
	switch {
	case errors.As(err, &tooBig):
		return &apiError{status: http.StatusRequestEntityTooLarge, kind: "invalid_request_error", msg: fmt.Sprintf("request body larger than %d bytes", tooBig.Limit)}
	case errors.As(err, &typeErr):
		field := strings.TrimPrefix(typeErr.Field, "sampling.") // the embedded struct's fields are the body's
		return badRequest(field, "field %q: a JSON %s where %s is wanted", field, typeErr.Value, jsonKind(typeErr.Type.String()))
	case errors.As(err, &synErr):
		return badRequest("", "malformed JSON at byte %d: %v", synErr.Offset, err)
	case errors.Is(err, io.EOF):
		return badRequest("", "empty request body: a JSON object is wanted")
	}
	return badRequest("", "malformed JSON: %v", err)
}

// parse reads and checks a request body.
func (s *Server) parse(w http.ResponseWriter, r *http.Request, isChat bool) (*job, *apiError) {
	var req request
	if aerr := s.decode(w, r, &req); aerr != nil {
		return nil, aerr
	}
	return s.parseRequest(&req, isChat)
}

// parseRequest checks a decoded request and makes its job.
func (s *Server) parseRequest(req *request, isChat bool) (*job, *apiError) {
	if req.Model != "" && req.Model != s.cfg.Model {
		return nil, &apiError{status: http.StatusNotFound, kind: "not_found_error", param: "model",
			msg: fmt.Sprintf("model %q is not served here (this server has %q)", req.Model, s.cfg.Model)}
	}
	j := &job{chat: isChat, stream: req.Stream, params: sample.DefaultParams()}
	var text string
	if isChat {
		var aerr *apiError
		if text, aerr = s.chatPrompt(req, j); aerr != nil {
			return nil, aerr
		}
	} else if req.promptIDs == nil {
		p, err := promptText(req.Prompt)
		if err != nil {
			return nil, badRequest("prompt", "prompt: %v", err)
		}
		text = p
	}
	flags := tokenizer.AddSpecial
	if isChat {
		flags |= tokenizer.ParseSpecial // the template's own control tokens
	}
	ids := req.promptIDs
	if ids == nil {
		var err error
		if ids, err = s.cfg.Tokenizer.Encode(text, flags); err != nil {
			return nil, badRequest("", "the prompt cannot be tokenized: %v", err)
		}
	}
	if len(ids) == 0 {
		return nil, badRequest("prompt", "the prompt is empty and the vocabulary adds no BOS")
	}
	nctx := s.eng.NCtx()
	if len(ids) >= nctx {
		return nil, badRequest("messages", "the prompt is %d tokens, the context holds %d: at least one must be left to generate", len(ids), nctx)
	}
	j.prompt = ids
	j.max = nctx - len(ids)
	for _, m := range []*int{req.MaxTokens, req.MaxCompletion} {
		if m == nil {
			continue
		}
		if *m <= 0 {
			return nil, badRequest("max_tokens", "max_tokens %d is not positive", *m)
		}
		if *m > j.max {
			return nil, badRequest("max_tokens", "max_tokens %d with a prompt of %d tokens exceeds the context of %d", *m, len(ids), nctx)
		}
		j.max = *m
	}
	p := &j.params
	set := func(dst *float32, v *float32) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.Temperature, req.Temperature)
	set(&p.TopP, req.TopP)
	set(&p.MinP, req.MinP)
	set(&p.FrequencyPenalty, req.FrequencyPenalty)
	set(&p.PresencePenalty, req.PresencePenalty)
	if req.TopK != nil {
		p.TopK = *req.TopK
	}
	p.RepeatPenalty = 1 // OpenAI's API has none; its penalties are frequency and presence
	if req.Seed != nil {
		p.Seed = uint64(*req.Seed)
	} else {
		p.Seed = uint64(s.cfg.Now().UnixNano())
	}
	if err := p.Validate(); err != nil {
		return nil, badRequest("", "%v", err)
	}
	stops, err := stopList(req.Stop)
	if err != nil {
		return nil, badRequest("stop", "stop: %v", err)
	}
	j.stops = stops
	if aerr := unsupported(req, isChat); aerr != nil {
		return nil, aerr
	}
	if aerr := s.options(req, j); aerr != nil {
		return nil, aerr
	}
	if j.mustCall {
		if j.json {
			return nil, badRequest("response_format", "response_format with a required tool call: the call is the answer's JSON")
		}
		if j.grammar != nil {
			return nil, badRequest("grammar", "grammar with a required tool call: the call is the answer's JSON")
		}
		j.json, j.schema = true, callSchema(j.tools)
	}
	return j, nil
}

// chatPrompt reads a chat request's tools into j and renders its messages
// with the model's chat template, ending with the assistant's header.
func (s *Server) chatPrompt(req *request, j *job) (string, *apiError) {
	if s.cfg.Template == nil {
		return "", badRequest("messages", "this model has no chat template: use /v1/completions")
	}
	if len(req.Messages) == 0 {
		return "", badRequest("messages", "messages is empty: at least one message is wanted")
	}
	if aerr := s.parseTools(req, j); aerr != nil {
		return "", aerr
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		default:
			return "", badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not system, user, assistant or tool", i, m.Role)
		}
		c, err := contentText(m.Content)
		if err != nil {
			return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
		}
		var aerr *apiError
		if msgs[i], aerr = toolMessage(i, m, c); aerr != nil {
			return "", aerr
		}
	}
	var text string
	var err error
	if tt, ok := s.cfg.Template.(chat.ToolTemplate); ok && j.tools != nil {
		var raws []json.RawMessage
		for _, t := range j.tools {
			raws = append(raws, t.raw)
		}
		text, err = tt.RenderTools(msgs, raws, true)
	} else {
		text, err = s.cfg.Template.Render(msgs, true)
	}
	if err != nil {
		return "", badRequest("messages", "messages: %v", err)
	}
	return text, nil
}

// unsupported refuses what a client asks for that this server does not do,
// so that no answer silently lacks it.
func unsupported(req *request, isChat bool) *apiError {
	switch {
	case req.N != nil && *req.N != 1:
		return badRequest("n", "n %d: this server returns one choice a request", *req.N)
	case req.BestOf != nil && *req.BestOf != 1:
		return badRequest("best_of", "best_of %d: this server returns one choice a request", *req.BestOf)
	case req.Echo != nil && *req.Echo:
		return badRequest("echo", "echo: this server does not return the prompt with the completion")
	case req.Suffix != nil && *req.Suffix != "":
		return badRequest("suffix", "suffix: this server does not complete text before a suffix")
	case !isChat && (given(req.Tools) || given(req.ToolChoice)):
		return badRequest("tools", "tools is a chat completion field")
	case given(req.Functions):
		return badRequest("functions", "functions (deprecated by OpenAI): use tools")
	case given(req.FunctionCall):
		return badRequest("function_call", "function_call (deprecated by OpenAI): use tool_choice")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text" &&
		req.ResponseFormat.Type != "json_object" && req.ResponseFormat.Type != "json_schema":
		return badRequest("response_format", "response_format %q: \"text\", \"json_object\" or \"json_schema\" is wanted", req.ResponseFormat.Type)
	case !isChat && req.TopLogprobs != nil:
		return badRequest("top_logprobs", "top_logprobs is a chat completion field: /v1/completions takes logprobs as a count")
	}
	return nil
}

// options reads the request's logprobs, logit bias and stream options into j.
func (s *Server) options(req *request, j *job) *apiError {
	if raw := strings.TrimSpace(string(req.Logprobs)); raw != "" && raw != "null" {
		if j.chat {
			if err := json.Unmarshal(req.Logprobs, &j.logprobs); err != nil {
				return badRequest("logprobs", "logprobs %s: true or false is wanted", raw)
			}
		} else {
			// A count of alternatives, 0 to 5 (OpenAI's bound).
			if err := json.Unmarshal(req.Logprobs, &j.top); err != nil || j.top < 0 || j.top > 5 {
				return badRequest("logprobs", "logprobs %s: a count of alternatives from 0 to 5 is wanted", raw)
			}
			j.logprobs = true
		}
	}
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
			return badRequest("top_logprobs", "top_logprobs %d is outside 0 to 20", *req.TopLogprobs)
		}
		if *req.TopLogprobs > 0 && !j.logprobs {
			return badRequest("top_logprobs", "top_logprobs %d needs logprobs: true", *req.TopLogprobs)
		}
		j.top = *req.TopLogprobs
	}
	if len(req.LogitBias) > 0 {
		bias := make(map[int]float32, len(req.LogitBias))
		for key, b := range req.LogitBias {
			id, ok := tokenID(key)
			if !ok || id >= s.cfg.Vocab {
				return badRequest("logit_bias", "logit_bias key %q: a token id from 0 to %d is wanted", key, s.cfg.Vocab-1)
			}
			if !(b >= -100 && b <= 100) {
				return badRequest("logit_bias", "logit_bias of token %d is %g: from -100 to 100 is wanted", id, b)
			}
			bias[id] = float32(b)
		}
		j.params.LogitBias = bias
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type == "json_object" {
		j.json = true
	} else if rf != nil && rf.Type == "json_schema" {
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			return badRequest("response_format", "response_format \"json_schema\" needs json_schema.schema")
		}
		sch, err := jsonmode.CompileSchema(rf.JSONSchema.Schema)
		if err != nil {
			return badRequest("response_format", "response_format json_schema: %v", err)
		}
		j.json, j.schema = true, jsonmode.Union{sch}
	}
	if req.Grammar != nil && *req.Grammar != "" {
		if j.json {
			return badRequest("grammar", "grammar with response_format %q: one constraint a request", req.ResponseFormat.Type)
		}
		g, err := grammar.Parse(*req.Grammar)
		if err != nil {
			return badRequest("grammar", "%v", err)
		}
		j.grammar = g
	}
	if req.StreamOptions != nil {
		if !req.Stream {
			return badRequest("stream_options", "stream_options is only allowed with stream: true")
		}
		j.usageChunk = req.StreamOptions.IncludeUsage
	}
	return nil
}

// run hands j to the scheduler and writes the answer as its text comes.
func (s *Server) run(w http.ResponseWriter, ctx context.Context, j *job) {
	smp, err := s.sampler(j)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	id := fmt.Sprintf("%s-%d", map[bool]string{true: "chatcmpl", false: "cmpl"}[j.chat], s.nextID.Add(1))
	created := s.cfg.Now().Unix()
	var stream *sseWriter
	if j.stream {
		stream = &sseWriter{w: w, s: s, j: j, id: id, created: created}
		stream.start()
	}
	t := &task{job: j, ctx: ctx, sampler: smp, notify: make(chan struct{}, 1)}
	s.sched.submit(t)
	// Until the scheduler is done with the task (a client gone is noticed
	// there, at the next step): its slot is free only then.
	var text strings.Builder
	var lps []tokenLogprob
	gate := newCallGate(j) // nil without tools
	for {
		<-t.notify
		delta, dlps, done := t.take()
		if stream == nil || gate != nil {
			text.WriteString(delta)
			lps = append(lps, dlps...)
		}
		if stream != nil {
			if gate != nil {
				delta, dlps = gate.pass(delta, dlps)
			}
			_ = stream.delta(delta, dlps) // a client gone cancels ctx: the scheduler ends the task
		}
		if done {
			break
		}
	}
	st, err := t.stats, t.err
	if err != nil {
		if stream != nil {
			stream.fail(err)
			return
		}
		writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
		return
	}
	if st.Reason == "cancelled" {
		return // the client is gone
	}
	finish := "stop"
	if st.Reason == "length" {
		finish = "length"
	}
	c, isCall := j.toolCall(text.String())
	if isCall {
		finish = "tool_calls"
	}
	usage := map[string]int{"prompt_tokens": len(j.prompt), "completion_tokens": len(st.Generated),
		"total_tokens": len(j.prompt) + len(st.Generated)}
	timings := t.timings(len(st.Generated))
	if stream != nil {
		if gate != nil {
			held, hlps := gate.release()
			if isCall {
				stream.toolCall(c, hlps)
			} else {
				_ = stream.delta(held, hlps)
			}
		}
		stream.finish(finish, usage, timings)
		return
	}
	choice := map[string]any{"index": 0, "finish_reason": finish, "logprobs": s.logprobs(j, lps)}
	object := "text_completion"
	if j.chat {
		object = "chat.completion"
		msg := map[string]any{"role": "assistant", "content": text.String()}
		if isCall {
			msg["content"], msg["tool_calls"] = nil, []any{c.json(0, false)}
		}
		choice["message"] = msg
	} else {
		choice["text"] = text.String()
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": object, "created": created, "model": s.cfg.Model,
		"choices": []any{choice}, "usage": usage, "timings": timings})
}

// sampler is j's sampler, constrained where j asks for JSON.
func (s *Server) sampler(j *job) (*sample.Sampler, error) {
	smp, err := sample.New(s.cfg.Vocab, j.params)
	if err != nil {
		return nil, err
	}
	if j.grammar != nil {
		s.grammarOnce.Do(func() { s.grammarTable = grammar.NewTable(s.cfg.Tokenizer, s.cfg.Vocab) })
		smp.SetConstraint(s.grammarTable.New(j.grammar))
	}
	if j.json {
		s.jsonOnce.Do(func() { s.jsonTable = jsonmode.NewTable(s.cfg.Tokenizer, s.cfg.Vocab) })
		if j.schema != nil {
			smp.SetConstraint(s.jsonTable.NewUnion(j.schema))
		} else {
			smp.SetConstraint(s.jsonTable.New())
		}
	}
	return smp, nil
}

// sseWriter writes a streamed answer as server-sent events: chunks of the
// OpenAI shape, then data: [DONE].
type sseWriter struct {
	w       http.ResponseWriter
	s       *Server
	j       *job
	id      string
	created int64
	timings map[string]any // llama-server's, sent with the usage
}

func (e *sseWriter) start() {
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	e.w.WriteHeader(http.StatusOK)
	if e.j.chat {
		e.event(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}, nil)
	}
}

// logprobs is a choice's "logprobs" for the tokens of lps in the
// endpoint's shape, or nil when the request did not ask for them.
func (s *Server) logprobs(j *job, lps []tokenLogprob) any {
	switch {
	case !j.logprobs:
		return nil
	case j.chat:
		return chatLogprobs(s.cfg.Tokenizer, lps)
	}
	return completionLogprobs(s.cfg.Tokenizer, lps)
}

// delta sends the text and log-probabilities generated since the last one
// (the log-probabilities of tokens whose text the stop strings hold back
// may come before it).
func (e *sseWriter) delta(text string, lps []tokenLogprob) error {
	if text == "" && len(lps) == 0 {
		return nil
	}
	choice := map[string]any{"index": 0, "finish_reason": nil}
	if e.j.chat {
		choice["delta"] = map[string]any{"content": text}
	} else {
		choice["text"] = text
	}
	if e.j.logprobs {
		choice["logprobs"] = e.s.logprobs(e.j, lps)
	}
	return e.event(choice, nil)
}

// toolCall sends an answer's call as one chunk (the whole arguments at
// once) with the log-probabilities of its tokens.
func (e *sseWriter) toolCall(c call, lps []tokenLogprob) {
	choice := map[string]any{"index": 0, "finish_reason": nil, "delta": map[string]any{"tool_calls": []any{c.json(0, true)}}}
	if e.j.logprobs {
		choice["logprobs"] = e.s.logprobs(e.j, lps)
	}
	_ = e.event(choice, nil)
}

// finish sends the finish reason and the usage (with llama-server's timings): in the last chunk, or with
// stream_options.include_usage in a chunk of its own after it, its choices
// empty, as OpenAI's API streams it.
func (e *sseWriter) finish(reason string, usage map[string]int, timings map[string]any) {
	e.timings = timings
	choice := map[string]any{"index": 0, "finish_reason": reason}
	if e.j.chat {
		choice["delta"] = map[string]any{}
	} else {
		choice["text"] = ""
	}
	if e.j.usageChunk {
		_ = e.event(choice, nil)
		_ = e.chunk([]any{}, usage)
	} else {
		_ = e.event(choice, usage)
	}
	_, _ = io.WriteString(e.w, "data: [DONE]\n\n")
	e.flush()
}

// fail ends a stream whose generation broke: an error event, then [DONE].
func (e *sseWriter) fail(err error) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": err.Error(), "type": "server_error"}})
	_, _ = fmt.Fprintf(e.w, "data: %s\n\ndata: [DONE]\n\n", b)
	e.flush()
}

func (e *sseWriter) event(choice map[string]any, usage map[string]int) error {
	return e.chunk([]any{choice}, usage)
}

func (e *sseWriter) chunk(choices []any, usage map[string]int) error {
	object := "text_completion"
	if e.j.chat {
		object = "chat.completion.chunk"
	}
	chunk := map[string]any{"id": e.id, "object": object, "created": e.created, "model": e.s.cfg.Model, "choices": choices}
	if usage != nil {
		chunk["usage"], chunk["timings"] = usage, e.timings // the last chunk's
	}
	b, err := json.Marshal(chunk)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return err
	}
	e.flush()
	return nil
}

func (e *sseWriter) flush() {
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// contentText is a message's content: a string, or an array of parts of
// which the text ones are joined.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("a string or an array of text parts is wanted")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("part %d is of type %q: only text parts are served", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// promptText is /v1/completions' prompt: a string or an array of one.
func promptText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("missing: a string is wanted")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", errors.New("a string or an array of strings is wanted")
	}
	if len(list) != 1 {
		return "", fmt.Errorf("%d prompts: this server completes one at a time", len(list))
	}
	return list[0], nil
}

// stopList is "stop": absent, a string, or up to four strings.
func stopList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("a string or an array of strings is wanted")
	}
	if len(list) > 4 {
		return nil, fmt.Errorf("%d stop strings, at most 4", len(list))
	}
	var out []string
	for _, x := range list {
		if x != "" {
			out = append(out, x)
		}
	}
	return out, nil
}

// jsonKind names a Go type as the JSON a client should send.
func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.Contains(goType, "string"):
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, kind, param, msg string) {
	e := map[string]any{"message": msg, "type": kind, "code": nil, "param": nil}
	if param != "" {
		e["param"] = param
	}
	writeJSON(w, status, map[string]any{"error": e})
}
