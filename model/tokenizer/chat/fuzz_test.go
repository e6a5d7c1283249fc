package chat

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/damascus-llm/damascus/internal/testmodel"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

// FuzzRender checks that no conversation makes the renderer panic, that
// every format keeps each message's (trimmed) content — a tool's result
// quoted, and refused by Llama 3 — and opens with the BOS text, and that the rendered prompt encodes. It needs no test data:
// the tokenizer is a small byte-level BPE built in code.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"", "hello", " padded\n", "<|eot_id|>", "<|start_header_id|>user", "\xff", "日本語 🦀", "\u2028x\u00a0"} {
		f.Add("user", s, s, true)
	}
	f.Add("system", "be brief", "hi", false)
	f.Add("tool", "x", "y", true)
	tok, err := tokenizer.FromKV(testmodel.BPEVocab())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, role, first, second string, gen bool) {
		msgs := []Message{{Role: role, Content: first}, {Role: "assistant", Content: second}}
		for _, fm := range []Format{Llama3, Llama31, Llama32} {
			out, err := Render(fm, msgs, Options{AddGenerationPrompt: gen, BOS: "<|begin_of_text|>"})
			result := role == "tool" || role == "ipython"
			if result && fm == Llama3 {
				if err == nil {
					t.Fatalf("%v: role %q accepted", fm, role)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%v: %v", fm, err)
			}
			if !strings.HasPrefix(out, "<|begin_of_text|>") {
				t.Fatalf("%v: %q does not open with BOS", fm, out)
			}
			for i, m := range msgs {
				want := jsTrim(m.Content)
				if i == 0 && result { // a tool's result is printed as a JSON string
					var q strings.Builder
					pyString(&q, m.Content)
					want = "<|start_header_id|>ipython<|end_header_id|>\n\n" + q.String() + "<|eot_id|>"
				}
				if !strings.Contains(out, want) {
					t.Fatalf("%v: %q lost content %q", fm, out, m.Content)
				}
			}
			if gen != strings.HasSuffix(out, "<|start_header_id|>assistant<|end_header_id|>\n\n") {
				t.Fatalf("%v: generation prompt %v, output %q", fm, gen, out)
			}
			ids, err := tok.Encode(out, tokenizer.ParseSpecial)
			if err != nil {
				if utf8.ValidString(out) {
					t.Fatalf("%v: encoding valid UTF-8 failed: %v", fm, err)
				}
				continue
			}
			if _, err := tok.Decode(ids, true); err != nil {
				t.Fatal(err)
			}
		}
	})
}
