package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/damascus-llm/damascus/model/jsonmode"
	"github.com/damascus-llm/damascus/model/llama/chat"
)

// Tool calling, as llama-server does it for Llama 3.x: the tools go into
// the prompt through Meta's template (chat.ToolTemplate); an answer that is
// one JSON object {"name": a tool, "parameters": {...}} comes back as a tool
// call (finish_reason "tool_calls"), anything else as content.
// tool_choice "required" or a named function constrains the answer to such
// an object (JSON mode over a schema of the tools); "none" leaves the tools
// out of the prompt.

// A tool is a function offered to the model.
type tool struct {
	name   string
	params json.RawMessage // its parameters' JSON Schema; nil: none given
	raw    json.RawMessage // the tools item as sent, printed into the prompt
}

// toolNamePattern is OpenAI's rule for function names.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// parseTools reads tools and tool_choice into j: the tools to offer (none
// for tool_choice "none") and whether the answer must be a call, and of
// which function (parse then constrains it with callSchema).
func (s *Server) parseTools(req *request, j *job) *apiError {
	choice := strings.TrimSpace(string(req.ToolChoice))
	if !given(req.Tools) {
		if choice != "" && choice != "null" && choice != `"none"` && choice != `"auto"` {
			return badRequest("tool_choice", "tool_choice %s without tools", choice)
		}
		return nil
	}
	if !j.chat {
		return badRequest("tools", "tools is a chat completion field")
	}
	if _, ok := s.cfg.Template.(chat.ToolTemplate); !ok {
		return badRequest("tools", "this model's chat template (%s) has no tool calling: Meta's Llama 3.1 and 3.2 templates have", s.cfg.Template.Name())
	}
	var items []json.RawMessage
	if err := json.Unmarshal(req.Tools, &items); err != nil {
		return badRequest("tools", "tools: an array of {\"type\": \"function\", \"function\": {...}} is wanted")
	}
	seen := map[string]bool{}
	for i, raw := range items {
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil || t.Type != "function" || t.Function == nil {
			return badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d]: {\"type\": \"function\", \"function\": {\"name\": ...}} is wanted", i)
		}
		f := t.Function
		if !toolNamePattern.MatchString(f.Name) {
			return badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d].function.name %q: 1 to 64 letters, digits, _ or - are wanted", i, f.Name)
		}
		if seen[f.Name] {
			return badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d]: a second function named %q", i, f.Name)
		}
		seen[f.Name] = true
		if p := bytes.TrimSpace(f.Parameters); len(p) > 0 && string(p) != "null" && p[0] != '{' {
			return badRequest(fmt.Sprintf("tools[%d].function.parameters", i), "tools[%d].function.parameters: a JSON Schema object is wanted", i)
		}
		j.tools = append(j.tools, tool{name: f.Name, params: f.Parameters, raw: raw})
	}
	switch choice {
	case "", "null", `"auto"`:
	case `"none"`:
		j.tools = nil
	case `"required"`:
		j.mustCall = true
	default:
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(req.ToolChoice, &named); err != nil || named.Type != "function" || !seen[named.Function.Name] {
			return badRequest("tool_choice", "tool_choice %s: \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": one of the tools}} is wanted", choice)
		}
		j.mustCall = true
		for _, t := range j.tools {
			if t.name == named.Function.Name {
				j.tools = []tool{t}
				break
			}
		}
	}
	if len(j.tools) == 0 {
		j.tools, j.mustCall = nil, false
	}
	return nil
}

// callSchema is a call of one of tools: {"name": its name, "parameters":
// an object valid under its schema where that schema compiles in JSON
// mode's subset where it stands (a "$ref" to the tool's own "$defs" does
// not), else any object}; one schema a tool, so that once the name is
// written the parameters are that tool's.
func callSchema(tools []tool) jsonmode.Union {
	u := make(jsonmode.Union, len(tools))
	for i, t := range tools {
		name, _ := json.Marshal(t.name)
		compile := func(params []byte) (*jsonmode.Schema, error) {
			return jsonmode.CompileSchema(fmt.Appendf(nil, `{"type": "object", "properties": {"name": {"const": %s}, "parameters": %s}, "required": ["name", "parameters"]}`, name, params))
		}
		if p := bytes.TrimSpace(t.params); len(p) > 0 && string(p) != "null" {
			if sch, err := compile(p); err == nil {
				u[i] = sch
				continue
			}
		}
		sch, err := compile([]byte(`{"type": "object"}`))
		if err != nil {
			panic(fmt.Sprintf("serve: the call schema of %s: %v", name, err)) // names as toolNamePattern allows always compile
		}
		u[i] = sch
	}
	return u
}

// toolMessage is one of the request's messages as the template takes it,
// a tool's result or an assistant's call among them (arguments a JSON object, or a
// string holding one as OpenAI sends them).
func toolMessage(i int, m message, content string) (chat.Message, *apiError) {
	role := m.Role
	if role == "developer" {
		role = "system"
	}
	out := chat.Message{Role: role, Content: content}
	for k, c := range m.ToolCalls {
		param := fmt.Sprintf("messages[%d].tool_calls[%d]", i, k)
		if m.Role != "assistant" {
			return out, badRequest(param, "%s: only an assistant's message holds tool calls", param)
		}
		if c.Type != "" && c.Type != "function" || c.Function.Name == "" {
			return out, badRequest(param, "%s: {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}} is wanted", param)
		}
		args := bytes.TrimSpace(c.Function.Arguments)
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = bytes.TrimSpace([]byte(s))
		}
		if len(args) == 0 {
			args = []byte("{}")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil {
			return out, badRequest(param+".function.arguments", "%s.function.arguments: a JSON object (or a string holding one) is wanted", param)
		}
		out.ToolCalls = append(out.ToolCalls, chat.ToolCall{Name: c.Function.Name, Arguments: json.RawMessage(args)})
	}
	return out, nil
}

// A call is a tool call found in an answer.
type call struct {
	ID, Name, Arguments string // Arguments: compact JSON, as OpenAI sends it
}

// toolCall is the call text holds, if it is one JSON object naming one of
// j's tools with an object of parameters ("arguments" taken too, and
// "type": "function", as Llama 3.x writes them at times).
func (j *job) toolCall(text string) (call, bool) {
	if j.tools == nil {
		return call{}, false
	}
	d := json.NewDecoder(strings.NewReader(strings.TrimSpace(text)))
	var obj map[string]json.RawMessage
	if err := d.Decode(&obj); err != nil || d.More() {
		return call{}, false
	}
	var name, typ string
	args, ok := obj["parameters"]
	if !ok {
		args = obj["arguments"]
	}
	if json.Unmarshal(obj["name"], &name) != nil || len(bytes.TrimSpace(args)) == 0 || bytes.TrimSpace(args)[0] != '{' {
		return call{}, false
	}
	if t, ok := obj["type"]; ok && (json.Unmarshal(t, &typ) != nil || typ != "function") {
		return call{}, false
	}
	for _, t := range j.tools {
		if t.name == name {
			var b bytes.Buffer
			_ = json.Compact(&b, args) // it decoded
			id := make([]byte, 12)
			_, _ = rand.Read(id)
			return call{ID: "call_" + hex.EncodeToString(id), Name: name, Arguments: b.String()}, true
		}
	}
	return call{}, false
}

// json is the call as an item of OpenAI's tool_calls.
func (c call) json(index int, streamed bool) map[string]any {
	m := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
	if streamed {
		m["index"] = index
	}
	return m
}

// callGate holds back a streamed answer while it may be a tool call:
// until its first non-space byte, and from then on all of it when that is
// "{" (or from the start when a call is required). What it holds is sent
// when the answer is done, as a call or, if it is none, as content.
type callGate struct {
	decided, hold bool
	held          strings.Builder
	lps           []tokenLogprob
}

func newCallGate(j *job) *callGate {
	if j.tools == nil {
		return nil
	}
	return &callGate{decided: j.mustCall, hold: j.mustCall}
}

// pass takes the next delta and returns what may be sent now.
func (g *callGate) pass(delta string, lps []tokenLogprob) (string, []tokenLogprob) {
	if g.decided && !g.hold {
		return delta, lps
	}
	g.held.WriteString(delta)
	g.lps = append(g.lps, lps...)
	if g.decided {
		return "", nil
	}
	t := strings.TrimLeft(g.held.String(), " \t\r\n")
	if t == "" {
		return "", nil
	}
	g.decided, g.hold = true, t[0] == '{'
	if g.hold {
		return "", nil
	}
	return g.release()
}

// release returns what is held and holds nothing more.
func (g *callGate) release() (string, []tokenLogprob) {
	s, l := g.held.String(), g.lps
	g.held.Reset()
	g.lps = nil
	return s, l
}

// given says a field holds something other than null or an empty array.
func given(raw json.RawMessage) bool {
	v := strings.TrimSpace(string(raw))
	return v != "" && v != "null" && v != "[]"
}
