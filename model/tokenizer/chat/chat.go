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
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/model/tokenizer"
)

// A Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant", …
	Content string `json:"content"`
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
}

// Render renders msgs in format f.
func Render(f Format, msgs []Message, opt Options) (string, error) {
	bos := opt.BOS
	if bos == "" {
		bos = "<|begin_of_text|>"
	}
	for i, m := range msgs {
		if m.Role == "tool" || m.Role == "ipython" {
			return "", fmt.Errorf("chat: message %d: role %q (tool calls) is not supported by the native renderer", i, m.Role)
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
		b.WriteString(bos)
		turn("system", "Cutting Knowledge Date: December 2023\nToday Date: "+date+"\n\n"+system)
		for _, m := range msgs {
			turn(m.Role, jsTrim(m.Content))
		}
	default:
		return "", fmt.Errorf("chat: unknown format %v", f)
	}
	if opt.AddGenerationPrompt {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
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
