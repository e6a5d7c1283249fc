// Package chat renders chat conversations into prompt text the way a
// model's tokenizer.chat_template does. It recognises the Llama 3.x Instruct
// templates and renders them natively (no Jinja engine): the output is
// byte-identical to apply_chat_template of transformers.js
// (@lenml/tokenizers 3.7.2), which the tests use as oracle.
//
// The rendered text already begins with the BOS token's text: encode it with
// tokenizer.ParseSpecial and without tokenizer.AddSpecial to get one BOS.
package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/model/tokenizer"
)

// A Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant", "tool", …
	Content string `json:"content"`
	// ToolCalls are an assistant turn's function calls: the Llama 3.1 and
	// 3.2 templates render one, in place of the content.
	ToolCalls []ToolCall `json:"-"`
}

// A ToolCall is a function the model called and its arguments.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage // a JSON object
}

// Format is a recognised chat template.
type Format int

// The recognised templates.
const (
	// Llama3 is Meta Llama 3 Instruct's template: each turn in header
	// tokens, BOS before the first.
	Llama3 Format = iota + 1
	// Llama31 is Llama 3.1 Instruct's: a system turn first with the
	// "Cutting Knowledge Date" and "Today Date: 26 Jul 2024" lines.
	Llama31
	// Llama32 is Llama 3.2 Instruct's: as Llama31, but the date is today's
	// where the renderer offers strftime_now.
	Llama32
)

func (f Format) String() string {
	switch f {
	case Llama3:
		return "llama3"
	case Llama31:
		return "llama3.1"
	case Llama32:
		return "llama3.2"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// knownTemplates maps the SHA-256 of a template (trailing newlines removed)
// to its format: the exact templates Meta ships, as convert_hf_to_gguf.py
// stores them in tokenizer.chat_template.
var knownTemplates = map[string]Format{
	"ba03a121d097859c7b5b9cd03af99aafe95275210d2876f642ad9929a150f122": Llama3,  // Meta-Llama-3-8B-Instruct
	"93c0e9aa3629bbd77e68dbc0f5621f6e6b23aa8d74b932595cdb8d64684526d7": Llama31, // Llama-3.1-8B-Instruct
	"d82792f95932f1c9cef5c4bd992f171225e3bf8c7b609b4557c9e1ec96be819f": Llama32, // Llama-3.2-1B/3B-Instruct
}

// ErrUnknownTemplate reports a chat template this package cannot render.
var ErrUnknownTemplate = errors.New("chat: unrecognised chat template")

// Detect recognises a chat template by its exact text.
func Detect(template string) (Format, error) {
	sum := sha256.Sum256([]byte(strings.TrimRight(template, "\n")))
	if f, ok := knownTemplates[hex.EncodeToString(sum[:])]; ok {
		return f, nil
	}
	if template == "" {
		return 0, fmt.Errorf("%w: the model has no tokenizer.chat_template", ErrUnknownTemplate)
	}
	return 0, fmt.Errorf("%w (supported: Llama 3, 3.1 and 3.2 Instruct; sha256 %x)", ErrUnknownTemplate, sum[:6])
}

// Options are the template variables a caller controls.
type Options struct {
	// AddGenerationPrompt ends the prompt with an open assistant header.
	AddGenerationPrompt bool
	// BOS is the bos_token text; empty means "<|begin_of_text|>".
	BOS string
	// DateString sets the template's date_string ("26 Jul 2024" form)
	// and wins over Now.
	DateString string
	// Now, when set, plays strftime_now for the Llama 3.2 template, which
	// then prints today's date (llama.cpp and Python transformers offer
	// strftime_now; transformers.js does not, and prints 26 Jul 2024).
	Now func() time.Time
	// Tools are the functions offered to the model (OpenAI's tools items,
	// {"type": "function", "function": {...}}), which the Llama 3.1 and 3.2
	// templates print into the first user turn; nil offers none.
	Tools []json.RawMessage
}

// Render renders msgs in format f. Tools, tool calls and tool results
// ("tool" or "ipython" turns) need Llama 3.1 or 3.2, which take one call a
// turn.
func Render(f Format, msgs []Message, opt Options) (string, error) {
	bos := opt.BOS
	if bos == "" {
		bos = "<|begin_of_text|>"
	}
	if f == Llama3 {
		for i, m := range msgs {
			if m.Role == "tool" || m.Role == "ipython" || len(m.ToolCalls) > 0 {
				return "", fmt.Errorf("chat: message %d: tool calls and results need a Llama 3.1 or 3.2 template, not %v", i, f)
			}
		}
		if opt.Tools != nil {
			return "", fmt.Errorf("chat: tools need a Llama 3.1 or 3.2 template, not %v", f)
		}
	}
	var b strings.Builder
	turn := func(role, content string) {
		b.WriteString("<|start_header_id|>")
		b.WriteString(role)
		b.WriteString("<|end_header_id|>\n\n")
		b.WriteString(content)
		b.WriteString("<|eot_id|>")
	}
	switch f {
	case Llama3:
		for i, m := range msgs {
			if i == 0 {
				b.WriteString(bos)
			}
			turn(m.Role, jsTrim(m.Content))
		}
	case Llama31, Llama32:
		if err := renderLlama31(&b, f, msgs, opt, bos, turn); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("chat: unknown format %v", f)
	}
	if opt.AddGenerationPrompt {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
}

// The Llama 3.1/3.2 templates' words to a model offered tools.
const (
	toolsEnvironment = "Environment: ipython\n"
	toolsPreamble    = "Given the following functions, please respond with a JSON for a function call " +
		"with its proper arguments that best answers the given prompt.\n\n" +
		`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.` +
		"Do not use variables.\n\n"
)

// renderLlama31 is the body of the Llama 3.1 and 3.2 templates (without
// builtin_tools, tools in the first user message): a system turn with the
// dates, the tools with the first message after it, then each turn — a
// call as {"name": …, "parameters": …}, a result as an ipython turn.
func renderLlama31(b *strings.Builder, f Format, msgs []Message, opt Options, bos string, turn func(role, content string)) error {
	date := opt.DateString
	if date == "" {
		date = "26 Jul 2024"
		if f == Llama32 && opt.Now != nil {
			date = opt.Now().Format("02 Jan 2006") // strftime("%d %b %Y")
		}
	}
	system := ""
	if len(msgs) > 0 && msgs[0].Role == "system" {
		system = jsTrim(msgs[0].Content)
		msgs = msgs[1:]
	}
	env := ""
	if opt.Tools != nil {
		env = toolsEnvironment
	}
	b.WriteString(bos)
	turn("system", env+"Cutting Knowledge Date: December 2023\nToday Date: "+date+"\n\n"+system)
	if opt.Tools != nil {
		if len(msgs) == 0 {
			return errors.New("chat: tools go into the first user message, and there is none")
		}
		var u strings.Builder
		u.WriteString(toolsPreamble)
		for i, t := range opt.Tools {
			if err := pyJSON(&u, t, 4); err != nil {
				return fmt.Errorf("chat: tool %d: %w", i, err)
			}
			u.WriteString("\n\n")
		}
		u.WriteString(jsTrim(msgs[0].Content))
		turn("user", u.String())
		msgs = msgs[1:]
	}
	for i, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			if len(m.ToolCalls) != 1 {
				return fmt.Errorf("chat: message %d has %d tool calls: this model takes one a turn", i, len(m.ToolCalls))
			}
			c := m.ToolCalls[0]
			var call strings.Builder
			call.WriteString(`{"name": "` + c.Name + `", "parameters": `)
			if err := pyJSON(&call, c.Arguments, 0); err != nil {
				return fmt.Errorf("chat: message %d: the arguments of %s: %w", i, c.Name, err)
			}
			call.WriteString("}")
			turn("assistant", call.String())
		case m.Role == "tool" || m.Role == "ipython":
			// The template prints a result with tojson when it "is
			// iterable", which a string is: quoted.
			var r strings.Builder
			pyString(&r, m.Content)
			turn("ipython", r.String())
		default:
			turn(m.Role, jsTrim(m.Content))
		}
	}
	return nil
}

// RenderTemplate recognises template and renders msgs with it.
func RenderTemplate(template string, msgs []Message, opt Options) (string, error) {
	f, err := Detect(template)
	if err != nil {
		return "", err
	}
	return Render(f, msgs, opt)
}

// jsTrim is the template's trim filter as transformers.js runs it
// (ECMAScript String.prototype.trim): it strips white space and line
// terminators — Zs, tab, VT, FF, BOM, LF, CR, U+2028, U+2029 — but not
// U+0085 or U+001C–U+001F, which Python's str.strip would also remove.
func jsTrim(s string) string {
	return strings.TrimFunc(s, isJSSpace)
}

func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// Prompt renders msgs with the model's own chat template and encodes the
// result: special-token text is parsed, and no BOS is added beyond the one
// the template writes.
func Prompt(tok *tokenizer.Tokenizer, msgs []Message, opt Options) ([]int32, error) {
	if opt.BOS == "" {
		opt.BOS, _ = tok.Text(tok.BOS())
	}
	text, err := RenderTemplate(tok.ChatTemplate(), msgs, opt)
	if err != nil {
		return nil, err
	}
	return tok.Encode(text, tokenizer.ParseSpecial)
}
