package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/internal/testfile"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/llama/chat"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
)

// tinyModel is the synthetic tiny Llama 3.2-shaped model in Q8_0 with the
// real Llama 3 vocabulary, written once for the test binary.
var tinyModel = testfile.New("tiny-q8_0.gguf", func(path string) error {
	kv, err := llama3vocab.Metadata()
	if err != nil {
		return err
	}
	p, _ := synth.LookupPreset("tiny")
	ft, _ := ftype.Parse("Q8_0")
	w, _, err := synth.Build(synth.Options{Preset: p, Type: ft, Seed: 3, Tokenizer: kv, Workers: 2})
	if err != nil {
		return err
	}
	return w.WriteFile(path)
})

// testServer serves a synthetic tiny Llama 3.2-shaped model with the real
// Llama 3 vocabulary and chat template (skipping where the vocabulary is
// not available) on a 256-position context.
func testServer(t *testing.T, cfg Config) (*httptest.Server, *Server) {
	t.Helper()
	return testServerSlots(t, cfg, 0)
}

// loadTiny loads the tiny model (skipping where it cannot be made), closed
// when tb ends.
func loadTiny(tb testing.TB) *llama.Loaded {
	tb.Helper()
	path, err := tinyModel.Path()
	if err != nil {
		tb.Skipf("no test model: %v", err)
	}
	ld, err := llama.Load(path, llama.LoadOptions{Placement: llama.PlaceMmap})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ld.Close() })
	return ld
}

// tinyContext is a context of nctx positions over ld, closed when tb ends.
func tinyContext(tb testing.TB, ld *llama.Loaded, nctx int) *llama.Context {
	tb.Helper()
	c, err := ld.Model.NewContext(llama.Options{NCtx: nctx, Threads: 2})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// testServerSlots is testServer over a batch of slots sequences of 256
// positions each (0: one Context).
func testServerSlots(t *testing.T, cfg Config, slots int) (*httptest.Server, *Server) {
	t.Helper()
	return testServerSized(t, cfg, slots, 256)
}

// testServerSized is testServerSlots with nctx positions a sequence.
func testServerSized(t *testing.T, cfg Config, slots, nctx int) (*httptest.Server, *Server) {
	t.Helper()
	ld := loadTiny(t)
	if slots > 0 {
		b, err := ld.Model.NewBatch(llama.Options{NCtx: nctx, NBatch: 64, Threads: 2}, slots)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		cfg.Batch = b
	} else {
		cfg.Context = tinyContext(t, ld, nctx)
	}
	if cfg.Template == nil {
		tmpl, err := chat.Detect(ld.Tokenizer.ChatTemplate(), "")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Template = tmpl
	}
	cfg.Model, cfg.Vocab, cfg.Tokenizer = "tiny", ld.Model.Config.Vocab, ld.Tokenizer
	if cfg.Now == nil {
		cfg.Now = fixedClock // the Llama 3.2 system turn's date: the same prompt every day
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, s
}

// fixedClock is the tests' server clock: what a request's prompt holds
// must not depend on the day the suite runs (the tiny model's greedy
// answers follow every token of it).
func fixedClock() time.Time { return time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC) }

func post(t *testing.T, ts *httptest.Server, path, body string) (int, map[string]any, string) {
	t.Helper()
	resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	return resp.StatusCode, v, string(raw)
}

const chatBody = `{"model":"tiny","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello there"}],"temperature":0,"max_tokens":8%s}`

// A chat completion at temperature 0: the OpenAI shape, usage counts, and
// the same answer again (the second request reuses the cached prefix);
// streamed, the deltas add up to the same text and end in [DONE].
func TestChatCompletion(t *testing.T) {
	ts, _ := testServer(t, Config{MaxQueue: 4})
	code, v, raw := post(t, ts, "/v1/chat/completions", fmt.Sprintf(chatBody, ""))
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if v["object"] != "chat.completion" || v["model"] != "tiny" {
		t.Errorf("object %v model %v", v["object"], v["model"])
	}
	choice := v["choices"].([]any)[0].(map[string]any)
	text := choice["message"].(map[string]any)["content"].(string)
	usage := v["usage"].(map[string]any)
	if usage["completion_tokens"].(float64) < 1 || usage["completion_tokens"].(float64) > 8 || usage["prompt_tokens"].(float64) < 10 {
		t.Errorf("usage %v", usage)
	}
	if fr := choice["finish_reason"]; fr != "length" && fr != "stop" {
		t.Errorf("finish_reason %v", fr)
	}
	if usage["completion_tokens"].(float64) == 8 && choice["finish_reason"] != "length" {
		t.Errorf("8 of 8 tokens, finish_reason %v", choice["finish_reason"])
	}
	_, v2, _ := post(t, ts, "/v1/chat/completions", fmt.Sprintf(chatBody, ""))
	if t2 := v2["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; t2 != text {
		t.Errorf("the same request again answered %q, first %q", t2, text)
	}
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(chatBody, `,"stream":true`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var streamed strings.Builder
	var last string
	var finish any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		last = strings.TrimPrefix(line, "data: ")
		if last == "[DONE]" {
			break
		}
		var chunk map[string]any
		if err := json.Unmarshal([]byte(last), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", last, err)
		}
		if chunk["object"] != "chat.completion.chunk" {
			t.Errorf("chunk object %v", chunk["object"])
		}
		c := chunk["choices"].([]any)[0].(map[string]any)
		if d, ok := c["delta"].(map[string]any)["content"].(string); ok {
			streamed.WriteString(d)
		}
		if c["finish_reason"] != nil {
			finish = c["finish_reason"]
		}
	}
	if last != "[DONE]" {
		t.Errorf("the stream ended with %q, not [DONE]", last)
	}
	if streamed.String() != text || finish != choice["finish_reason"] {
		t.Errorf("streamed %q (%v), not streamed %q (%v)", streamed.String(), finish, text, choice["finish_reason"])
	}
}

func TestCompletionAndModels(t *testing.T) {
	ts, _ := testServer(t, Config{})
	code, v, raw := post(t, ts, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":4,"temperature":0,"seed":1}`)
	if code != 200 || v["object"] != "text_completion" {
		t.Fatalf("status %d: %s", code, raw)
	}
	if _, ok := v["choices"].([]any)[0].(map[string]any)["text"].(string); !ok {
		t.Errorf("no text: %s", raw)
	}
	for path, want := range map[string]string{"/v1/models": `"id":"tiny"`, "/health": `"status":"ok"`} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
	}
}

// Bad requests get the status and an error naming what is wrong; none
// reaches the model. The same on one slot and on a batch of 3.
func TestBadRequests(t *testing.T) {
	for _, slots := range []int{0, 3} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) { badRequests(t, slots) })
	}
}

func badRequests(t *testing.T, slots int) {
	ts, _ := testServerSlots(t, Config{MaxBody: 4096}, slots)
	long := strings.Repeat("word ", 400)
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/chat/completions", `{"messages":[`, 400, "malformed JSON"},
		{"/v1/chat/completions", ``, 400, "empty request body"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":"many"}`, 400, `"max_tokens"`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, 400, `"temperature"`},
		{"/v1/chat/completions", `{"messages":[]}`, 400, "messages is empty"},
		{"/v1/chat/completions", `{"messages":[{"role":"robot","content":"hi"}]}`, 400, "messages[0].role"},
		{"/v1/chat/completions", `{"model":"gpt-4","messages":[{"role":"user","content":"hi"}]}`, 404, `model \"gpt-4\" is not served`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":100000}`, 400, "exceeds the context of 256"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_p":3}`, 400, "top-p"},
		{"/v1/completions", `{"prompt":"` + long + `"}`, 400, "the context holds 256"},
		{"/v1/completions", `{"prompt":"` + strings.Repeat("x", 5000) + `"}`, 413, "larger than 4096 bytes"},
		{"/v1/completions", `{"max_tokens":3}`, 400, "prompt: missing"},
		{"/v1/nothing", `{}`, 404, "no endpoint"},
		// Asked for and not provided: refused, never silently left out.
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":2}`, 400, "n 2: this server returns one choice"},
		{"/v1/completions", `{"prompt":"hi","best_of":3}`, 400, "best_of 3"},
		{"/v1/completions", `{"prompt":"hi","echo":true}`, 400, "echo"},
		{"/v1/completions", `{"prompt":"hi","suffix":"end"}`, 400, "suffix"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bad name"}}]}`, 400, "tools[0].function.name"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"retrieval"}]}`, 400, "tools[0]: {"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":{"type":"function"}}`, 400, "an array of"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, 400, `a second function named \"f\"`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, 400, "parameters: a JSON Schema object"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, 400, "without tools"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, 400, "tool_choice"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","response_format":{"type":"json_object"}}`, 400, "the call is the answer's JSON"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"functions":[{"name":"f"}]}`, 400, "use tools"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}},{"type":"function","function":{"name":"g","arguments":"{}"}}]}]}`, 400, "2 tool calls"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{not json"}}]}]}`, 400, "messages[1].tool_calls[0].function.arguments"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 400, "only an assistant"},
		{"/v1/chat/completions", `{"messages":[{"role":"function","content":"hi"}]}`, 400, "messages[0].role"},
		{"/v1/completions", `{"prompt":"hi","tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "tools is a chat completion field"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{}}}`, 400, `needs json_schema.schema`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"a":{"type":"string","format":"date"}}}}}}`, 400, `\"format\" is not supported`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"yaml"}}`, 400, `response_format \"yaml\"`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logprobs":"yes"}`, 400, "true or false"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21}`, 400, "outside 0 to 20"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, 400, "needs logprobs: true"},
		{"/v1/completions", `{"prompt":"hi","logprobs":6}`, 400, "from 0 to 5"},
		{"/v1/completions", `{"prompt":"hi","logprobs":true}`, 400, "a count of alternatives"},
		{"/v1/completions", `{"prompt":"hi","top_logprobs":2}`, 400, "chat completion field"},
		{"/v1/completions", `{"prompt":"hi","logit_bias":{"the":5}}`, 400, `logit_bias key \"the\"`},
		{"/v1/completions", `{"prompt":"hi","logit_bias":{"128256":5}}`, 400, "from 0 to 128255"},
		{"/v1/completions", `{"prompt":"hi","logit_bias":{"42":500}}`, 400, "from -100 to 100"},
		{"/v1/completions", `{"prompt":"hi","stream_options":{"include_usage":true}}`, 400, "only allowed with stream: true"},
	} {
		code, _, raw := post(t, ts, c.path, c.body)
		if code != c.status || !strings.Contains(raw, c.want) || !strings.Contains(raw, `"error"`) {
			t.Errorf("%s %.60s: %d %s, want %d and %q", c.path, c.body, code, raw, c.status, c.want)
		}
	}
}

// Beyond the queue's room a request is answered 503 at once, not queued.
func TestBusyIs503(t *testing.T) {
	ts, s := testServer(t, Config{MaxQueue: 0})
	s.slot <- struct{}{} // a request owns the model
	s.waiting.Add(1)
	defer func() { <-s.slot; s.waiting.Add(-1) }()
	code, _, raw := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":2}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(raw, "server busy") {
		t.Errorf("%d %s, want 503 server busy", code, raw)
	}
}

func TestMain(m *testing.M) { testfile.Main(m, tinyModel) }

// Listen serves the endpoints on a free port until the HTTP server stops,
// then hands Serve's error over.
func TestListen(t *testing.T) {
	_, s := testServer(t, Config{})
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + l.Addr.String() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"ok"`) {
		t.Errorf("GET /health: %d %s", resp.StatusCode, b)
	}
	l.HTTP.Close()
	if err := <-l.Done; err != http.ErrServerClosed {
		t.Errorf("Serve returned %v after Close, want %v", err, http.ErrServerClosed)
	}
	if _, err := s.Listen("127.0.0.1:-1"); err == nil || !strings.HasPrefix(err.Error(), "listen: ") {
		t.Errorf("Listen on a bad port: %v", err)
	}
}

// logprobsOracle is the log-softmax of the model's logits after prompt,
// computed here from a fresh context of the same file: what the server's
// first token entry must say.
func logprobsOracle(t *testing.T, prompt string) (ids []int32, lp func(id int32) float64, best int32) {
	t.Helper()
	ld := loadTiny(t)
	c := tinyContext(t, ld, 256)
	ids, err := ld.Tokenizer.Encode(prompt, tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := c.Eval(ids, false)
	if err != nil {
		t.Fatal(err)
	}
	logits = append([]float32(nil), logits...)
	var sum float64
	for i, l := range logits {
		sum += math.Exp(float64(l))
		if l > logits[best] {
			best = int32(i)
		}
	}
	return ids, func(id int32) float64 { return float64(logits[id]) - math.Log(sum) }, best
}

// Log-probabilities: the first token's entry is the model's log-softmax
// (from a context of its own), greedy picks the top alternative, the
// alternatives come most likely first, the tokens' bytes make up the text,
// and a stream carries the same entries. The completions endpoint gives
// the legacy lists, as many as tokens.
func TestLogprobs(t *testing.T) {
	ts, s := testServer(t, Config{})
	const prompt = "Once upon a time"
	_, oracle, best := logprobsOracle(t, prompt)
	body := `{"messages":[{"role":"user","content":"Hello"}],"temperature":0,"max_tokens":6,"logprobs":true,"top_logprobs":3%s}`
	code, v, raw := post(t, ts, "/v1/chat/completions", fmt.Sprintf(body, ""))
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	choice := v["choices"].([]any)[0].(map[string]any)
	text := choice["message"].(map[string]any)["content"].(string)
	content := choice["logprobs"].(map[string]any)["content"].([]any)
	if want := int(v["usage"].(map[string]any)["completion_tokens"].(float64)); len(content) != want && !(choice["finish_reason"] == "stop" && len(content) == want-1) {
		t.Errorf("%d entries for %d tokens (%v)", len(content), want, choice["finish_reason"])
	}
	var bytes []byte
	for i, e := range content {
		e := e.(map[string]any)
		for _, b := range e["bytes"].([]any) {
			bytes = append(bytes, byte(b.(float64)))
		}
		top := e["top_logprobs"].([]any)
		if len(top) != 3 {
			t.Fatalf("entry %d: %d alternatives, want 3", i, len(top))
		}
		first := top[0].(map[string]any)
		if first["token"] != e["token"] || first["logprob"] != e["logprob"] {
			t.Errorf("entry %d: greedy took %v (%v), the top alternative is %v (%v)", i, e["token"], e["logprob"], first["token"], first["logprob"])
		}
		for k := 1; k < len(top); k++ {
			if top[k].(map[string]any)["logprob"].(float64) > top[k-1].(map[string]any)["logprob"].(float64) {
				t.Errorf("entry %d: alternatives out of order: %v", i, top)
			}
		}
	}
	if string(bytes) != text {
		t.Errorf("the entries' bytes say %q, the content %q", bytes, text)
	}
	// The streamed entries are the same.
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(body, `,"stream":true,"stream_options":{"include_usage":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var streamed []any
	var chunks []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk map[string]any
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		chunks = append(chunks, chunk)
		if cs := chunk["choices"].([]any); len(cs) == 1 {
			if lp, ok := cs[0].(map[string]any)["logprobs"].(map[string]any); ok {
				streamed = append(streamed, lp["content"].([]any)...)
			}
		}
	}
	a, _ := json.Marshal(streamed)
	b, _ := json.Marshal(content)
	if string(a) != string(b) {
		t.Errorf("streamed entries %s, not streamed %s", a, b)
	}
	if n := len(chunks); n < 2 || len(chunks[n-1]["choices"].([]any)) != 0 || chunks[n-1]["usage"] == nil || chunks[n-2]["usage"] != nil {
		t.Errorf("include_usage: the last chunks are %v", chunks[max(0, n-2):])
	}
	// /v1/completions: the legacy lists, the first entry the oracle's.
	code, v, raw = post(t, ts, "/v1/completions", `{"prompt":"`+prompt+`","temperature":0,"max_tokens":4,"logprobs":2}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	lp := v["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
	tokens, lps, tops := lp["tokens"].([]any), lp["token_logprobs"].([]any), lp["top_logprobs"].([]any)
	if len(tokens) == 0 || len(tokens) != len(lps) || len(lps) != len(tops) {
		t.Fatalf("lists of %d tokens, %d logprobs, %d alternatives: %s", len(tokens), len(lps), len(tops), raw)
	}
	piece, _ := s.cfg.Tokenizer.Piece(best, true)
	if got, want := lps[0].(float64), oracle(best); tokens[0] != piece || math.Abs(got-want) > 1e-4 {
		t.Errorf("first token %q at %.6f, the model's greedy %q at %.6f", tokens[0], got, piece, want)
	}
	for i, m := range tops {
		if n := len(m.(map[string]any)); n < 1 || n > 2 {
			t.Errorf("token %d: %d alternatives, want 1 or 2", i, n)
		}
	}
}

// A logit bias steers the draw: +100 on one token makes every greedy token
// that one; -100 on the greedy first token makes the first another.
func TestLogitBias(t *testing.T) {
	ts, s := testServer(t, Config{})
	const prompt = "Once upon a time"
	_, _, best := logprobsOracle(t, prompt)
	piece, _ := s.cfg.Tokenizer.Piece(1234, false)
	_, v, raw := post(t, ts, "/v1/completions", `{"prompt":"`+prompt+`","temperature":0,"max_tokens":3,"logit_bias":{"1234":100}}`)
	if got := v["choices"].([]any)[0].(map[string]any)["text"]; got != strings.Repeat(piece, 3) {
		t.Errorf("token 1234 biased by +100: %q, want %q (%s)", got, strings.Repeat(piece, 3), raw)
	}
	_, v, raw = post(t, ts, "/v1/completions", fmt.Sprintf(`{"prompt":"%s","temperature":0,"max_tokens":1,"logprobs":0,"logit_bias":{"%d":-100}}`, prompt, best))
	lp := v["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
	bestPiece, _ := s.cfg.Tokenizer.Piece(best, true)
	if tokens := lp["tokens"].([]any); len(tokens) != 1 || tokens[0] == bestPiece {
		t.Errorf("the greedy token %d (%q) biased by -100 still came first: %s", best, bestPiece, raw)
	}
}

// /tokenize and /detokenize, as llama-server answers them: the server's
// own tokenizer's ids (BOS only with add_special), pieces on request, the
// text back from the ids; bad bodies and ids outside the vocabulary 400.
func TestTokenize(t *testing.T) {
	ts, s := testServer(t, Config{})
	const text = "Hello world, it's <|eot_id|> héllo"
	want, err := s.cfg.Tokenizer.Encode(text, tokenizer.ParseSpecial)
	if err != nil {
		t.Fatal(err)
	}
	code, v, raw := post(t, ts, "/tokenize", `{"content":"`+text+`"}`)
	got, _ := json.Marshal(v["tokens"])
	wantJSON, _ := json.Marshal(want)
	if code != 200 || string(got) != string(wantJSON) {
		t.Errorf("/tokenize: %d %s, want tokens %s", code, raw, wantJSON)
	}
	_, v, _ = post(t, ts, "/tokenize", `{"content":"Hi","add_special":true,"parse_special":false,"with_pieces":true}`)
	pieces := v["tokens"].([]any)
	if first := pieces[0].(map[string]any); len(pieces) < 2 || first["piece"] != "<|begin_of_text|>" {
		t.Errorf("with add_special and pieces: %v, want BOS first", pieces)
	}
	_, v, raw = post(t, ts, "/detokenize", `{"tokens":`+string(wantJSON)+`}`)
	if v["content"] != text {
		t.Errorf("/detokenize of /tokenize's ids: %s, want %q", raw, text)
	}
	for _, c := range []struct{ path, body, want string }{
		{"/tokenize", `{}`, "content: missing"},
		{"/tokenize", `{"content":5}`, `"content"`},
		{"/detokenize", `{"tokens":[1,999999]}`, "999999"},
		{"/detokenize", `{"tokens":"abc"}`, `"tokens"`},
	} {
		if code, _, raw := post(t, ts, c.path, c.body); code != 400 || !strings.Contains(raw, c.want) {
			t.Errorf("%s %s: %d %s, want 400 naming %q", c.path, c.body, code, raw, c.want)
		}
	}
}

// GET /metrics counts what the server did: after one completion its prompt
// and generated tokens as usage reported them, no request left in a slot;
// the same prompt again is served from the slot's cache but its last token.
func TestMetrics(t *testing.T) {
	ts, _ := testServer(t, Config{})
	metric := func(name string) float64 {
		t.Helper()
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "damascus_"+name+" "); ok {
				var f float64
				if _, err := fmt.Sscan(v, &f); err != nil {
					t.Fatalf("%s: %q", name, line)
				}
				return f
			}
		}
		t.Fatalf("no damascus_%s in %s", name, b)
		return 0
	}
	const body = `{"prompt":"Once upon a time","max_tokens":4,"temperature":0}`
	_, v, raw := post(t, ts, "/v1/completions", body)
	usage, ok := v["usage"].(map[string]any)
	if !ok {
		t.Fatalf("no usage: %s", raw)
	}
	pt, ct := usage["prompt_tokens"].(float64), usage["completion_tokens"].(float64)
	for name, want := range map[string]float64{"requests_total": 1, "requests_processing": 0, "prompt_tokens_total": pt,
		"prompt_tokens_cached_total": 0, "tokens_predicted_total": ct, "slots": 1} {
		if got := metric(name); got != want {
			t.Errorf("damascus_%s %v, want %v", name, got, want)
		}
	}
	if n := metric("n_decode_total"); n < ct {
		t.Errorf("%v model steps for %v tokens", n, ct)
	}
	post(t, ts, "/v1/completions", body)
	if got, want := metric("prompt_tokens_cached_total"), pt-1; got != want {
		t.Errorf("the same prompt again: %v tokens from the cache, want %v", got, want)
	}
}

// JSON mode: even the random tiny model answers a prefix of one JSON
// object (encoding/json finds no syntax error in it, only its end), and
// with the closing brace favoured a whole object, then stops.
func TestJSONMode(t *testing.T) {
	ts, s := testServer(t, Config{})
	for seed := range 3 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Give me JSON"}],"max_tokens":40,"seed":%d,"response_format":{"type":"json_object"}}`, seed)
		code, v, raw := post(t, ts, "/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("status %d: %s", code, raw)
		}
		choice := v["choices"].([]any)[0].(map[string]any)
		text := choice["message"].(map[string]any)["content"].(string)
		if choice["finish_reason"] == "stop" {
			if !json.Valid([]byte(text)) || !strings.HasPrefix(strings.TrimSpace(text), "{") {
				t.Errorf("seed %d: stopped with %q, not a JSON object", seed, text)
			}
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		for {
			if _, err := dec.Token(); err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Errorf("seed %d: %q is not a prefix of JSON: %v", seed, text, err)
				}
				break
			}
		}
	}
	ids, err := s.cfg.Tokenizer.Encode("}", 0)
	if err != nil || len(ids) != 1 {
		t.Fatalf("the closing brace is %v (%v), not one token", ids, err)
	}
	body := fmt.Sprintf(`{"prompt":"JSON:","max_tokens":40,"temperature":0,"logit_bias":{"%d":30},"response_format":{"type":"json_object"}}`, ids[0])
	_, v, raw := post(t, ts, "/v1/completions", body)
	choice := v["choices"].([]any)[0].(map[string]any)
	var obj map[string]any
	if text := choice["text"].(string); choice["finish_reason"] != "stop" || json.Unmarshal([]byte(text), &obj) != nil {
		t.Errorf("with the closing brace favoured: %s, want a whole JSON object and stop", raw)
	}
}

// A JSON schema holds even for the random tiny model: its answer is an
// object of the schema's properties in its order, the enum's values and
// booleans only, complete (nothing but whitespace left to choose).
func TestJSONSchema(t *testing.T) {
	ts, _ := testServer(t, Config{})
	const schema = `{"type":"object","properties":{"ok":{"type":"boolean"},"kind":{"enum":["cat","dog",3]},"n":{"type":"null"}},"required":["ok","kind"]}`
	for seed := range 3 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Classify"}],"max_tokens":60,"seed":%d,"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":%s}}}`, seed, schema)
		code, v, raw := post(t, ts, "/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("status %d: %s", code, raw)
		}
		choice := v["choices"].([]any)[0].(map[string]any)
		text := choice["message"].(map[string]any)["content"].(string)
		var got struct {
			OK   *bool           `json:"ok"`
			Kind json.RawMessage `json:"kind"`
			N    json.RawMessage `json:"n"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if choice["finish_reason"] != "stop" || dec.Decode(&got) != nil || got.OK == nil ||
			(string(got.Kind) != `"cat"` && string(got.Kind) != `"dog"` && string(got.Kind) != "3") ||
			(got.N != nil && string(got.N) != "null") ||
			strings.Index(text, `"ok"`) > strings.Index(text, `"kind"`) {
			t.Errorf("seed %d: %q (%v) is not valid under the schema", seed, text, choice["finish_reason"])
		}
	}
}

// With API keys, a request without one of them is a 401 in OpenAI's error
// shape; /health and /v1/models stay open; an empty key is refused.
func TestAPIKeys(t *testing.T) {
	ts, _ := testServer(t, Config{MaxQueue: 4, APIKeys: []string{"alpha", "beta"}})
	do := func(method, path, key, body string) int {
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct{ Error struct{ Type string } }
		_ = json.NewDecoder(resp.Body).Decode(&v)
		if resp.StatusCode == 401 && (v.Error.Type != "authentication_error" || resp.Header.Get("WWW-Authenticate") != "Bearer") {
			t.Errorf("%s %s: a 401 of type %q", method, path, v.Error.Type)
		}
		return resp.StatusCode
	}
	const body = `{"prompt":"hi","max_tokens":1}`
	for _, c := range []struct {
		method, path, key string
		want              int
	}{
		{"POST", "/v1/completions", "", 401}, {"POST", "/v1/completions", "gamma", 401}, {"POST", "/v1/completions", "alph", 401},
		{"POST", "/v1/completions", "beta", 200}, {"POST", "/v1/completions", "alpha", 200},
		{"GET", "/metrics", "", 401}, {"GET", "/props", "", 401}, {"POST", "/tokenize", "", 401},
		{"GET", "/health", "", 200}, {"GET", "/v1/models", "", 200},
	} {
		if got := do(c.method, c.path, c.key, body); got != c.want {
			t.Errorf("%s %s with key %q: %d, want %d", c.method, c.path, c.key, got, c.want)
		}
	}
	ld := loadTiny(t)
	if _, err := New(Config{Context: tinyContext(t, ld, 64), Tokenizer: ld.Tokenizer, Vocab: ld.Model.Config.Vocab, APIKeys: []string{""}}); err == nil {
		t.Error("an empty API key was accepted")
	}
}

// An allowed origin's preflight is answered 204 with the methods and
// headers, its requests carry Access-Control-Allow-Origin; another
// origin's preflight is a 403 and its requests carry no CORS header; the
// preflight needs no API key, the request does.
func TestCORS(t *testing.T) {
	ts, _ := testServer(t, Config{MaxQueue: 4, APIKeys: []string{"k"}, AllowOrigins: []string{"http://localhost:3000"}})
	do := func(method, origin, key string) *http.Response {
		req, _ := http.NewRequest(method, ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"hi","max_tokens":1}`))
		req.Header.Set("Origin", origin)
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := do("OPTIONS", "http://localhost:3000", ""); r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
		!strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("allowed preflight: %d %v", r.StatusCode, r.Header)
	}
	if r := do("POST", "http://localhost:3000", "k"); r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Errorf("allowed request: %d %v", r.StatusCode, r.Header)
	}
	if r := do("POST", "http://localhost:3000", ""); r.StatusCode != 401 {
		t.Errorf("allowed origin without a key: %d", r.StatusCode)
	}
	if r := do("OPTIONS", "http://evil.example", ""); r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other preflight: %d %v", r.StatusCode, r.Header)
	}
	if r := do("POST", "http://evil.example", "k"); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin's request: %v", r.Header)
	}
}

// llama-server's timings: the evaluated prompt tokens (the cached prefix
// apart, on a second request), the generated ones and their rates, in the
// answer and in a stream's last chunk.
func TestTimings(t *testing.T) {
	ts, _ := testServer(t, Config{MaxQueue: 4})
	body := fmt.Sprintf(chatBody, "")
	for round := range 2 {
		code, v, raw := post(t, ts, "/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("status %d: %s", code, raw)
		}
		tm, u := v["timings"].(map[string]any), v["usage"].(map[string]any)
		if tm["prompt_n"].(float64)+tm["cache_n"].(float64) != u["prompt_tokens"] || tm["predicted_n"] != u["completion_tokens"] ||
			!(tm["predicted_per_second"].(float64) > 0) || !(tm["prompt_ms"].(float64) > 0) {
			t.Errorf("round %d: timings %v, usage %v", round, tm, u)
		}
		if cached := tm["cache_n"].(float64); (round == 0) != (cached == 0) {
			t.Errorf("round %d: %v prompt tokens from the cache", round, cached)
		}
	}
	chunks := streamChunks(t, ts, fmt.Sprintf(chatBody, `,"stream":true`))
	last := chunks[len(chunks)-1]
	if tm, ok := last["timings"].(map[string]any); !ok || tm["predicted_n"] != last["usage"].(map[string]any)["completion_tokens"] {
		t.Errorf("the last chunk: %v", last)
	}
}
