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

	"github.com/damascus-llm/damascus/model/llama/chat"
)

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"The weather in a city",` +
	`"parameters":{"type":"object","properties":{"city":{"enum":["Paris","Oslo"]},"unit":{"enum":["c","f"]}},"required":["city","unit"]}}}`

// searchTool's parameters are bounded (an enum) so that the tiny model's
// call ends within max_tokens whichever tool it picks: an unbounded string
// would let a pseudo-random model write one until the limit.
const searchTool = `{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"enum":["news","maps"]}},"required":["q"]}}}`

// toolBody is a chat request offering tools with tool_choice (raw JSON).
func toolBody(tools, choice, extra string) string {
	return fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[%s],"tool_choice":%s,"temperature":0,"max_tokens":400%s}`, tools, choice, extra)
}

// A required call (the tiny model's answer constrained to a call): the
// OpenAI shape — content null, one call with an id, finish_reason
// "tool_calls" — and arguments valid under the tool's schema; the same
// streamed, as one tool_calls delta after the role chunk.
func TestToolCallRequired(t *testing.T) {
	ts, _ := testServerSized(t, Config{MaxQueue: 4}, 0, 1024)
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
		code, v, raw := post(t, ts, "/v1/chat/completions", toolBody(weatherTool+","+searchTool, choice, ""))
		if choice != `"required"` {
			// Named: its schema (enums) constrains the arguments.
			code, v, raw = post(t, ts, "/v1/chat/completions", toolBody(weatherTool, choice, ""))
		}
		if code != 200 {
			t.Fatalf("%s: status %d: %s", choice, code, raw)
		}
		c := v["choices"].([]any)[0].(map[string]any)
		msg := c["message"].(map[string]any)
		if c["finish_reason"] != "tool_calls" || msg["content"] != nil {
			t.Fatalf("%s: %s", choice, raw)
		}
		calls := msg["tool_calls"].([]any)
		call := calls[0].(map[string]any)
		fn := call["function"].(map[string]any)
		if len(calls) != 1 || call["type"] != "function" || !strings.HasPrefix(call["id"].(string), "call_") {
			t.Errorf("%s: calls %v", choice, calls)
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(fn["arguments"].(string)), &args); err != nil {
			t.Fatalf("%s: arguments %q: %v", choice, fn["arguments"], err)
		}
		if choice != `"required"` {
			if fn["name"] != "get_weather" || (args["city"] != "Paris" && args["city"] != "Oslo") || (args["unit"] != "c" && args["unit"] != "f") {
				t.Errorf("%s: %v %v outside the tool's schema", choice, fn["name"], args)
			}
		} else if !(fn["name"] == "get_weather" && (args["city"] == "Paris" || args["city"] == "Oslo")) &&
			!(fn["name"] == "search" && (args["q"] == "news" || args["q"] == "maps")) {
			t.Errorf("%s: called %v with %v, outside the tools' schemas", choice, fn["name"], args)
		}

		chunks := streamChunks(t, ts, toolBody(weatherTool, `{"type":"function","function":{"name":"get_weather"}}`, `,"stream":true`))
		var got []any
		for _, ch := range chunks {
			d := ch["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
			if tc, ok := d["tool_calls"]; ok {
				got = append(got, tc.([]any)...)
			} else if d["content"] != nil && d["content"] != "" {
				t.Errorf("streamed content %q beside a required call", d["content"])
			}
		}
		last := chunks[len(chunks)-1]["choices"].([]any)[0].(map[string]any)
		if len(got) != 1 || last["finish_reason"] != "tool_calls" {
			t.Fatalf("streamed calls %v, finish %v", got, last["finish_reason"])
		}
		sc := got[0].(map[string]any)
		if sc["index"] != 0.0 || sc["function"].(map[string]any)["name"] != "get_weather" {
			t.Errorf("streamed call %v", sc)
		}
	}
}

// streamChunks posts a streamed chat request and returns its chunks
// before [DONE], which it wants last.
func streamChunks(t *testing.T, ts *httptest.Server, body string) []map[string]any {
	t.Helper()
	chunks, done := sseEvents(t, ts.URL+"/v1/chat/completions", body)
	if !done {
		t.Fatal("the stream ended without [DONE]")
	}
	return chunks
}

// sseEvents posts a streamed request and returns its events' JSON objects
// and whether the stream ended with data: [DONE].
func sseEvents(t *testing.T, url, body string) ([]map[string]any, bool) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return events, true
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		events = append(events, e)
	}
	return events, false
}

// With tool_choice "auto" the tiny model answers in words: content,
// streamed and not alike (the stream held back while the answer might
// have been a call), the tools in the prompt; "none" leaves them out.
func TestToolsAuto(t *testing.T) {
	ts, _ := testServerSized(t, Config{MaxQueue: 4}, 0, 1024)
	_, plain, _ := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather in Paris?"}],"temperature":0,"max_tokens":16}`)
	tokens := func(v map[string]any) float64 { return v["usage"].(map[string]any)["prompt_tokens"].(float64) }
	code, v, raw := post(t, ts, "/v1/chat/completions", toolBody(weatherTool, `"auto"`, ""))
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if tokens(v) <= tokens(plain)+40 {
		t.Errorf("prompt of %v tokens with a tool, %v without", tokens(v), tokens(plain))
	}
	c := v["choices"].([]any)[0].(map[string]any)
	text, _ := c["message"].(map[string]any)["content"].(string)
	if c["finish_reason"] == "tool_calls" || strings.HasPrefix(strings.TrimSpace(text), "{") {
		t.Skipf("the tiny model answered with a call or an object: %s", raw) // the case below needs words
	}
	var streamed strings.Builder
	chunks := streamChunks(t, ts, toolBody(weatherTool, `"auto"`, `,"stream":true`))
	for _, ch := range chunks {
		if d, ok := ch["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
			streamed.WriteString(d)
		}
	}
	if streamed.String() != text {
		t.Errorf("streamed %q, not streamed %q", streamed.String(), text)
	}
	_, none, _ := post(t, ts, "/v1/chat/completions", toolBody(weatherTool, `"none"`, ""))
	if tokens(none) != tokens(plain) {
		t.Errorf("tool_choice none: a prompt of %v tokens, %v without tools", tokens(none), tokens(plain))
	}
}

// A conversation with a call and its result goes into the prompt; a
// template without tool calling refuses tools and tool turns by name.
func TestToolHistory(t *testing.T) {
	ts, _ := testServerSized(t, Config{MaxQueue: 4}, 0, 1024)
	history := `{"messages":[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"c\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"{\"temp\": 21}"}],"tools":[` + weatherTool + `],"temperature":0,"max_tokens":4}`
	code, v, raw := post(t, ts, "/v1/chat/completions", history)
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	_, first, _ := post(t, ts, "/v1/chat/completions", toolBody(weatherTool, `"auto"`, ""))
	if a, b := v["usage"].(map[string]any)["prompt_tokens"].(float64), first["usage"].(map[string]any)["prompt_tokens"].(float64); a <= b+10 {
		t.Errorf("a prompt of %v tokens with the call and result, %v without", a, b)
	}
	chatml, _ := chat.Detect("", "chatml")
	ts2, _ := testServerSized(t, Config{Template: chatml, MaxQueue: 4}, 0, 1024)
	for body, want := range map[string]string{
		toolBody(weatherTool, `"auto"`, ""): "(chatml) has no tool calling",
		history:                             "(chatml) has no tool calling",
		`{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"x"}]}`: "no tool calls or results",
	} {
		if code, _, raw := post(t, ts2, "/v1/chat/completions", body); code != 400 || !strings.Contains(raw, want) {
			t.Errorf("chatml: %d %s, want 400 and %q", code, raw, want)
		}
	}
}

// toolCall takes one JSON object naming an offered tool, with parameters
// (or arguments) an object; anything else is content.
func TestToolCallParse(t *testing.T) {
	j := &job{tools: []tool{{name: "get_weather"}, {name: "search"}}}
	for text, want := range map[string]string{
		`{"name": "get_weather", "parameters": {"city": "Paris"}}`:                `get_weather {"city":"Paris"}`,
		" \n{\"type\": \"function\", \"name\": \"search\", \"parameters\": {}}\n": `search {}`,
		`{"name":"search","arguments":{"q":"a b"}}`:                               `search {"q":"a b"}`,
		`{"name": "other", "parameters": {}}`:                                     ``,
		`{"name": "search", "parameters": "q"}`:                                   ``,
		`{"name": "search", "parameters": {}} and more`:                           ``,
		`{"name": "search", "parameters": {}`:                                     ``,
		`{"type": "tool", "name": "search", "parameters": {}}`:                    ``,
		`The weather is fine.`:                                                    ``,
	} {
		c, ok := j.toolCall(text)
		got := ""
		if ok {
			got = c.Name + " " + c.Arguments
		}
		if got != want {
			t.Errorf("toolCall(%q) = %q, want %q", text, got, want)
		}
	}
	if _, ok := (&job{}).toolCall(`{"name": "search", "parameters": {}}`); ok {
		t.Error("a call found without tools")
	}
}

// The gate passes words at once, and holds an answer from a leading "{"
// (or from the start when a call is required).
func TestCallGate(t *testing.T) {
	feed := func(g *callGate, parts ...string) (passed string) {
		for _, p := range parts {
			s, _ := g.pass(p, nil)
			passed += s
		}
		return passed
	}
	tools := []tool{{name: "f"}}
	if got := feed(newCallGate(&job{tools: tools}), " \n", "Hello", " world"); got != " \nHello world" {
		t.Errorf("words: passed %q", got)
	}
	g := newCallGate(&job{tools: tools})
	if got := feed(g, "\n", ` {"na`, `me": "f"}`); got != "" {
		t.Errorf("a call: passed %q", got)
	}
	if held, _ := g.release(); held != "\n {\"name\": \"f\"}" {
		t.Errorf("held %q", held)
	}
	if got := feed(newCallGate(&job{tools: tools, mustCall: true}), "x"); got != "" {
		t.Errorf("required: passed %q", got)
	}
	if newCallGate(&job{}) != nil {
		t.Error("a gate without tools")
	}
}

// POST /apply-template renders what a chat completion reads: tokenized as
// is, its tokens are the completion's prompt tokens, tools included; a bad
// request is the completion's 400. GET /props names the slots, context and
// chat format.
func TestApplyTemplateAndProps(t *testing.T) {
	ts, _ := testServerSized(t, Config{MaxQueue: 4}, 2, 1024)
	body := toolBody(weatherTool, `"auto"`, "")
	code, v, raw := post(t, ts, "/apply-template", body)
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	prompt := v["prompt"].(string)
	if !strings.HasPrefix(prompt, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n") ||
		!strings.HasSuffix(prompt, "<|start_header_id|>assistant<|end_header_id|>\n\n") || !strings.Contains(prompt, `"name": "get_weather"`) {
		t.Errorf("prompt %q", prompt)
	}
	q, _ := json.Marshal(map[string]any{"content": prompt})
	_, tk, _ := post(t, ts, "/tokenize", string(q))
	_, done, _ := post(t, ts, "/v1/chat/completions", strings.Replace(body, `"max_tokens":400`, `"max_tokens":2`, 1))
	if n, want := len(tk["tokens"].([]any)), done["usage"].(map[string]any)["prompt_tokens"].(float64); float64(n) != want {
		t.Errorf("the applied template is %d tokens, the completion's prompt %v", n, want)
	}
	if code, _, raw := post(t, ts, "/apply-template", `{"messages":[]}`); code != 400 || !strings.Contains(raw, "messages is empty") {
		t.Errorf("empty messages: %d %s", code, raw)
	}
	resp, err := http.Get(ts.URL + "/props")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var props map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&props); err != nil {
		t.Fatal(err)
	}
	gen := props["default_generation_settings"].(map[string]any)
	if props["total_slots"] != 2.0 || gen["n_ctx"] != 1024.0 || props["chat_format"] != "llama3.2" || props["eos_token"] != "<|eot_id|>" ||
		!strings.Contains(props["chat_template"].(string), "tools_in_user_message") {
		t.Errorf("props %v", props)
	}
}

// The call schema keeps each tool's parameters where they compile in
// place, and falls back to any object where they do not (a $ref to the
// tool's own $defs, a keyword outside the subset) — never a panic; with
// several tools the name written picks whose parameters hold.
func TestCallSchema(t *testing.T) {
	for params, strict := range map[string]bool{
		`{"type":"object","properties":{"unit":{"enum":["c","f"]}},"required":["unit"]}`:         true,
		`{"type":"object","properties":{"u":{"$ref":"#/$defs/U"}},"$defs":{"U":{"enum":["c"]}}}`: false,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":3}}}`:                    false,
		``:     false,
		`null`: false,
	} {
		sch := callSchema([]tool{{name: "f", params: json.RawMessage(params)}})
		st := sch.Start()
		ok := st.WriteString(`{"name": "f", "parameters": {"other": 1}}`) && st.Done()
		if ok == strict {
			t.Errorf("params %s: any object accepted %v", params, ok)
		}
	}
	two := callSchema([]tool{
		{name: "f", params: json.RawMessage(`{"type":"object","properties":{"unit":{"enum":["c","f"]}},"required":["unit"]}`)},
		{name: "g", params: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","maxLength":8}}}`)},
	})
	for text, want := range map[string]bool{
		`{"name": "f", "parameters": {"unit": "c"}}`: true,
		`{"name": "f", "parameters": {"other": 1}}`:  false,
		`{"name": "g", "parameters": {"other": 1}}`:  true,
		`{"name": "h", "parameters": {}}`:            false,
	} {
		st := two.Start()
		if got := st.WriteString(text) && st.Done(); got != want {
			t.Errorf("two tools, %s: valid %v, want %v", text, got, want)
		}
	}
}
