package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testfile"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/llama/chat"
	"github.com/damascus-llm/damascus/model/synth"
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

// testServerSlots is testServer over a batch of slots sequences of 256
// positions each (0: one Context).
func testServerSlots(t *testing.T, cfg Config, slots int) (*httptest.Server, *Server) {
	t.Helper()
	modelPath, err := tinyModel.Path()
	if err != nil {
		t.Skipf("no test model: %v", err)
	}
	ld, err := llama.Load(modelPath, llama.LoadOptions{Placement: llama.PlaceMmap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ld.Close() })
	if slots > 0 {
		b, err := ld.Model.NewBatch(llama.Options{NCtx: 256, NBatch: 64, Threads: 2}, slots)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		cfg.Batch = b
	} else {
		c, err := ld.Model.NewContext(llama.Options{NCtx: 256, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		cfg.Context = c
	}
	tmpl, err := chat.Detect(ld.Tokenizer.ChatTemplate(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.Vocab, cfg.Tokenizer, cfg.Template = "tiny", ld.Model.Config.Vocab, ld.Tokenizer, tmpl
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, s
}

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
