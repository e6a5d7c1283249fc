// Package chat renders conversations into the prompt formats of chat models.
// Like llama.cpp's llama_chat_apply_template, it recognises a model's Jinja
// template by its markers and renders the known format natively instead of
// running Jinja.
package chat

import (
	"errors"
	"fmt"
	"strings"
)

// A Message is one turn of a conversation.
type Message struct {
	Role    string // system, user or assistant
	Content string
}

// Template renders a conversation.
type Template interface {
	// Render formats msgs; with addAssistant it ends with the header that
	// opens the assistant's reply.
	Render(msgs []Message, addAssistant bool) string
	Name() string
}

// Detect picks the format of a tokenizer.chat_template, or the one named
// name ("llama3", "chatml") when name is not empty.
func Detect(template, name string) (Template, error) {
	if name != "" {
		for _, t := range []Template{llama3{}, chatML{}} {
			if t.Name() == name {
				return t, nil
			}
		}
		return nil, fmt.Errorf("unknown chat format %q (llama3, chatml)", name)
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

func (llama3) Render(msgs []Message, addAssistant bool) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
	}
	if addAssistant {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String()
}

// chatML is llama.cpp's LLM_CHAT_TEMPLATE_CHATML.
type chatML struct{}

func (chatML) Name() string { return "chatml" }

func (chatML) Render(msgs []Message, addAssistant bool) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if addAssistant {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}
