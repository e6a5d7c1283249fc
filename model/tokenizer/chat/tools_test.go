package chat

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

// pyCase is one rendering request for baseline/jinja/render.py, messages
// in the OpenAI shape the Llama templates read.
type pyCase struct {
	Template            string            `json:"template"`
	Messages            []map[string]any  `json:"messages"`
	Tools               []json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	DateString          string            `json:"date_string"`
}

// pyOracle renders cases with Jinja2 as Python transformers does, skipping
// where python3 or its jinja2 module is missing.
func pyOracle(t *testing.T, cases []pyCase) []string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the Jinja2 chat-template oracle needs it")
	}
	if err := exec.Command(py, "-c", "import jinja2").Run(); err != nil {
		t.Skip("python3 has no jinja2 module (Debian: apt-get install python3-jinja2): the chat-template oracle needs it")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "baseline", "jinja", "render.py")
	return runOracle(t, exec.Command(py, script), cases)
}

// oracleMessages is msgs as the template reads them: a call's arguments as
// an object, a result's content as a string.
func oracleMessages(msgs []Message) []map[string]any {
	out := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		o := map[string]any{"role": m.Role, "content": m.Content}
		if len(m.ToolCalls) > 0 {
			var calls []any
			for _, c := range m.ToolCalls {
				calls = append(calls, map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
			}
			o["tool_calls"] = calls
		}
		out[i] = o
	}
	return out
}

// JSON values that tojson must print as Python does: numbers of every
// form, escapes, Unicode, nesting and empty containers, keys out of order.
var toolJSON = []string{
	`{"city": "Paris", "days": 3}`,
	`{"b": 1, "a": [1, 2.0, -0.5, 1e-7, 1E16, 12345678901234567890, -0, 0.0, 1.5e300, 100e-2], "c": {}}`,
	`{"q": "say \"hi\"\\ \n\t\r\b\f \u0001 \u001f </script> & < > \u2028 naïve 日本語 🦙 \ud83e\udd99"}`,
	`{"nested": {"list": [[], {}, [{"x": null}], true, false]}, "z": 0.1, "y": 3.14159, "w": 1e15, "v": 1e16}`,
	`{}`,
}

var toolDefs = []string{
	`{"type": "function", "function": {"name": "get_weather", "description": "Today's weather in a city, °C", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7.5}}, "required": ["city"]}}}`,
	`{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"query":{"type":"string","description":"words \"quoted\"\nnewline"},"tags":{"type":"array","items":{"enum":["a","b",1,2.0,null]}}}}}}`,
	`{"type": "function", "function": {"name": "noargs", "parameters": {"type": "object", "properties": {}}}}`,
}

// toolConversations returns conversations that use tools: tools offered
// or not, calls, results, several rounds, with and without a system turn.
func toolConversations() []pyCase {
	rng := rand.New(rand.NewPCG(4, 4))
	texts := []string{"What's the weather in Paris?", "  padded  ", "", "Line one\nLine two", "naïve 日本語", `{"json": true}`}
	var cases []pyCase
	for i := range 120 {
		var msgs []Message
		if rng.IntN(2) == 0 {
			msgs = append(msgs, Message{Role: "system", Content: texts[rng.IntN(len(texts))]})
		}
		msgs = append(msgs, Message{Role: "user", Content: texts[rng.IntN(len(texts))]})
		for range rng.IntN(4) {
			switch rng.IntN(3) {
			case 0:
				call := ToolCall{Name: []string{"get_weather", "search", "noargs"}[rng.IntN(3)], Arguments: json.RawMessage(toolJSON[rng.IntN(len(toolJSON))])}
				msgs = append(msgs, Message{Role: "assistant", ToolCalls: []ToolCall{call}})
			case 1:
				msgs = append(msgs, Message{Role: []string{"tool", "ipython"}[rng.IntN(2)], Content: toolJSON[rng.IntN(len(toolJSON))]})
			default:
				msgs = append(msgs, Message{Role: []string{"user", "assistant"}[rng.IntN(2)], Content: texts[rng.IntN(len(texts))]})
			}
		}
		c := pyCase{Messages: oracleMessages(msgs), AddGenerationPrompt: i%2 == 0, DateString: fmt.Sprintf("%02d Nov 2026", 1+i%28)}
		if i%4 != 3 {
			for _, k := range rng.Perm(len(toolDefs))[:1+rng.IntN(len(toolDefs))] {
				c.Tools = append(c.Tools, json.RawMessage(toolDefs[k]))
			}
		}
		cases = append(cases, c)
	}
	return cases
}

// TestRenderToolsMatchesJinja2 renders conversations with tools, calls and
// results in the Llama 3.1 and 3.2 templates, natively and with Jinja2 as
// Python transformers runs it, and wants equal bytes; a conversation the
// template refuses (two calls in a turn, tools and no message) is refused
// by both.
func TestRenderToolsMatchesJinja2(t *testing.T) {
	templates := map[Format]string{Llama32: string(testdata.Llama32Template.Read(t)), Llama31: string(testdata.Llama31Template.Read(t))}
	var cases []pyCase
	var formats []Format
	var native [][]Message
	convs := toolConversations()
	// Refused by both: two calls in one turn; tools without a message.
	two := []Message{{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "a", Arguments: json.RawMessage(`{}`)}, {Name: "b", Arguments: json.RawMessage(`{}`)}}}}
	convs = append(convs,
		pyCase{Messages: oracleMessages(two), DateString: "01 Jan 2026"},
		pyCase{Messages: []map[string]any{{"role": "system", "content": "s"}}, Tools: []json.RawMessage{json.RawMessage(toolDefs[0])}, DateString: "01 Jan 2026"})
	for _, f := range []Format{Llama32, Llama31} {
		for _, c := range convs {
			c.Template = templates[f]
			cases = append(cases, c)
			formats = append(formats, f)
		}
	}
	// The native messages, rebuilt from the oracle's.
	for _, c := range cases {
		var msgs []Message
		for _, o := range c.Messages {
			m := Message{Role: o["role"].(string)}
			if s, ok := o["content"].(string); ok {
				m.Content = s
			}
			if calls, ok := o["tool_calls"].([]any); ok {
				for _, c := range calls {
					fn := c.(map[string]any)["function"].(map[string]any)
					m.ToolCalls = append(m.ToolCalls, ToolCall{Name: fn["name"].(string), Arguments: fn["arguments"].(json.RawMessage)})
				}
			}
			msgs = append(msgs, m)
		}
		native = append(native, msgs)
	}
	want := pyOracle(t, cases)
	bad := 0
	for i, c := range cases {
		got, err := Render(formats[i], native[i], Options{AddGenerationPrompt: c.AddGenerationPrompt, DateString: c.DateString, Tools: c.Tools})
		if err != nil {
			got = "error: " + err.Error()
		}
		same := got == want[i] || strings.HasPrefix(got, "error: ") && strings.HasPrefix(want[i], "error: ")
		if !same {
			if bad++; bad <= 3 {
				t.Errorf("case %d (%v):\nours:   %q\noracle: %q", i, formats[i], got, want[i])
			}
		}
	}
	t.Logf("%d renderings compared, %d differ", len(cases), bad)
}

// Python's float repr and integer printing, without the oracle.
func TestPyNumber(t *testing.T) {
	for in, want := range map[string]string{
		"1": "1", "-0": "0", "12345678901234567890": "12345678901234567890", "2.0": "2.0", "-0.5": "-0.5",
		"1e-7": "1e-07", "1E16": "1e+16", "1e15": "1000000000000000.0", "0.0001": "0.0001", "0.00001": "1e-05",
		"100e-2": "1.0", "1.5e300": "1.5e+300", "-0.0": "-0.0", "0.1": "0.1", "123.456": "123.456", "1e400": "Infinity",
	} {
		if got := pyNumber(in); got != want {
			t.Errorf("pyNumber(%s) = %s, want %s", in, got, want)
		}
	}
	var b strings.Builder
	if err := pyJSON(&b, json.RawMessage(`{"a":[],"b":{"c":[1,{}]}}`), 2); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": [],\n  \"b\": {\n    \"c\": [\n      1,\n      {}\n    ]\n  }\n}"; b.String() != want {
		t.Errorf("indented:\n%s\nwant\n%s", b.String(), want)
	}
	if err := pyJSON(&b, json.RawMessage(`{"a":1} {}`), 0); err == nil {
		t.Error("two values accepted")
	}
}
