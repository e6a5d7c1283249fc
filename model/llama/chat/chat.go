// Package chat renders conversations into the prompt formats of chat models.
// Like llama.cpp's llama_chat_apply_template, it recognises a model's Jinja
// template and renders the known format natively instead of running Jinja:
// Meta's Llama 3.1 and 3.2 templates exactly as Jinja does (with tools,
// through model/tokenizer/chat), others by their markers in llama.cpp's
// llama3 and chatml formats.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	tchat "github.com/damascus-llm/damascus/model/tokenizer/chat"
)

// A Message is one turn of a conversation.
type Message struct {
	Role    string // system, user, assistant, or tool (a call's result)
	Content string
	// ToolCalls are an assistant turn's function calls (ToolTemplate).
	ToolCalls []ToolCall
}

// A ToolCall is a function the model called and its arguments (a JSON object).
type ToolCall = tchat.ToolCall

// Template renders a conversation.
type Template interface {
	// Render formats msgs; with addAssistant it ends with the header that
	// opens the assistant's reply. BOS is left to the tokenizer.
	Render(msgs []Message, addAssistant bool) (string, error)
	Name() string
}

// A ToolTemplate is a Template that can offer the model functions to call
// (OpenAI's tools items) and render calls and their results.
type ToolTemplate interface {
	Template
	RenderTools(msgs []Message, tools []json.RawMessage, addAssistant bool) (string, error)
}

// formats are the formats a name picks.
var formats = []Template{llama3{}, meta{f: tchat.Llama31}, meta{f: tchat.Llama32}, chatML{}}

// Detect picks the format of a tokenizer.chat_template, or the one named
// name ("llama3", "llama3.1", "llama3.2", "chatml") when name is not empty.
func Detect(template, name string) (Template, error) {
	if name != "" {
		for _, t := range formats {
			if t.Name() == name {
				return t, nil
			}
		}
		return nil, fmt.Errorf("unknown chat format %q (llama3, llama3.1, llama3.2, chatml)", name)
	}
	if f, err := tchat.Detect(template); err == nil && f != tchat.Llama3 {
		return meta{f: f}, nil // Meta's own, tools included
	}
	switch {
	case template == "":
		return nil, errors.New("the model has no chat template (tokenizer.chat_template); name a format")
	case strings.Contains(template, "<|start_header_id|>") && strings.Contains(template, "<|end_header_id|>"):
		return llama3{}, nil
	case strings.Contains(template, "<|im_start|>"):
		return chatML{}, nil
	}
	return nil, errors.New("the model's chat template is not one this engine recognises (llama3, chatml)")
}

// llama3 is llama.cpp's LLM_CHAT_TEMPLATE_LLAMA_3. BOS comes from the tokenizer.
type llama3 struct{}

func (llama3) Name() string { return "llama3" }

func (llama3) Render(msgs []Message, addAssistant bool) (string, error) {
	if err := plain(msgs, "llama3"); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
	}
	if addAssistant {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
}

// chatML is llama.cpp's LLM_CHAT_TEMPLATE_CHATML.
type chatML struct{}

func (chatML) Name() string { return "chatml" }

func (chatML) Render(msgs []Message, addAssistant bool) (string, error) {
	if err := plain(msgs, "chatml"); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if addAssistant {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

// plain refuses tool calls and results in a format without them.
func plain(msgs []Message, format string) error {
	for i, m := range msgs {
		if len(m.ToolCalls) > 0 || m.Role == "tool" || m.Role == "ipython" {
			return fmt.Errorf("message %d: the %s chat format has no tool calls or results", i, format)
		}
	}
	return nil
}

// meta is Meta's Llama 3.1 or 3.2 Instruct template, rendered as Jinja
// does (a system turn with the knowledge and today's dates first; tools in
// the first user turn). The 3.2 template's date is today's, as llama.cpp and
// Python transformers render it (strftime_now).
type meta struct {
	f   tchat.Format
	now func() time.Time // nil: time.Now
}

func (m meta) Name() string { return m.f.String() }

// WithClock is t reading today's date from now where it prints one (the
// Llama 3.2 template's system turn); other templates are t unchanged.
// A server passes its clock, and its tests a fixed one, so that a prompt
// does not change with the day the tests run.
func WithClock(t Template, now func() time.Time) Template {
	if m, ok := t.(meta); ok {
		m.now = now
		return m
	}
	return t
}

func (m meta) Render(msgs []Message, addAssistant bool) (string, error) {
	return m.RenderTools(msgs, nil, addAssistant)
}

func (m meta) RenderTools(msgs []Message, tools []json.RawMessage, addAssistant bool) (string, error) {
	now := m.now
	if now == nil {
		now = time.Now
	}
	tm := make([]tchat.Message, len(msgs))
	for i, x := range msgs {
		tm[i] = tchat.Message{Role: x.Role, Content: x.Content, ToolCalls: x.ToolCalls}
	}
	const bos = "<|begin_of_text|>"
	out, err := tchat.Render(m.f, tm, tchat.Options{AddGenerationPrompt: addAssistant, BOS: bos, Now: now, Tools: tools})
	// The template writes BOS; the tokenizer adds it, as for the others.
	return strings.TrimPrefix(out, bos), err
}
