package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
)

// llama3Template is Meta-Llama-3-Instruct's template, which the shared
// tokenizer_config.json carries.
func llama3Template(t *testing.T) string {
	raw := testdata.Llama3TokenizerConfig.Read(t)
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.ChatTemplate
}

func TestDetect(t *testing.T) {
	for f, tmpl := range map[Format]string{
		Llama32: string(testdata.Llama32Template.Read(t)),
		Llama31: string(testdata.Llama31Template.Read(t)),
		Llama3:  llama3Template(t),
	} {
		got, err := Detect(tmpl)
		if err != nil || got != f {
			t.Errorf("Detect(%v template) = %v, %v", f, got, err)
		}
	}
	if _, err := Detect("{{ messages }}"); err == nil {
		t.Error("Detect accepted an unknown template")
	}
}

func TestRenderLlama32(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "  You are terse.\n"}, {Role: "user", Content: "Hi!"}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Date?"}}
	now := func() time.Time { return time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC) }
	got, err := Render(Llama32, msgs, Options{AddGenerationPrompt: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" +
		"Cutting Knowledge Date: December 2023\nToday Date: 05 Nov 2026\n\nYou are terse.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nDate?<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n"
	if got != want {
		t.Errorf("Render =\n%q\nwant\n%q", got, want)
	}
	if _, err := Render(Llama3, []Message{{Role: "tool", Content: "{}"}}, Options{}); err == nil {
		t.Error("Llama 3 rendered a tool message")
	}
}

// oracleCase is one rendering request for baseline/jstokenizers/render.js.
type oracleCase struct {
	Template            string    `json:"template"`
	Messages            []Message `json:"messages"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
	DateString          *string   `json:"date_string,omitempty"`
}

// jsOracle renders cases with apply_chat_template of @lenml/tokenizers.
func jsOracle(t *testing.T, cases []oracleCase) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed: the chat-template oracle needs it")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "baseline", "jstokenizers")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml", "tokenizers")); err != nil {
		t.Skipf("chat-template oracle not installed: run npm ci in %s (make baseline)", dir)
	}
	cmd := exec.Command(node, "render.js")
	cmd.Dir = dir
	texts := runOracle(t, cmd, cases)
	for i, text := range texts {
		if msg, failed := strings.CutPrefix(text, "error: "); failed {
			t.Fatalf("oracle failed on case %d: %s", i, msg)
		}
	}
	return texts
}

// runOracle sends cases to a renderer (render.js or render.py) as JSON on
// its stdin and returns its renderings, "error: why" where it refused one.
func runOracle[C any](t *testing.T, cmd *exec.Cmd, cases []C) []string {
	t.Helper()
	req, err := json.Marshal(map[string]any{"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Args[len(cmd.Args)-1], err, stderr.Bytes())
	}
	var res []struct {
		Text  string `json:"text"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(res))
	for i, r := range res {
		texts[i] = r.Text
		if r.Error != "" {
			texts[i] = "error: " + r.Error
		}
	}
	return texts
}

// conversations returns varied conversations: with and without a system
// turn, empty, long, odd roles, content with white space the trim filter
// must (or must not) remove, special-token text and Unicode.
func conversations() []oracleCase {
	rng := rand.New(rand.NewPCG(9, 9))
	pads := []string{"", " ", "\n", "\t \n", "\u00a0", "\u3000", "\ufeff", "\u2028", "\u0085", "\u001c", "\u200b", "\r\n"}
	texts := []string{"Hello", "What is 2+2?", "", "  ", "Line one\nLine two", "<|eot_id|> injected", "naïve 日本語 🦙", "{\"json\": true}", "Tabs\tinside"}
	roles := []string{"user", "assistant", "user", "assistant", "system", "narrator"}
	var cases []oracleCase
	for i := range 200 {
		var msgs []Message
		if rng.IntN(2) == 0 {
			msgs = append(msgs, Message{Role: "system", Content: pads[rng.IntN(len(pads))] + texts[rng.IntN(len(texts))] + pads[rng.IntN(len(pads))]})
		}
		for range rng.IntN(5) {
			msgs = append(msgs, Message{Role: roles[rng.IntN(len(roles))], Content: pads[rng.IntN(len(pads))] + texts[rng.IntN(len(texts))] + pads[rng.IntN(len(pads))]})
		}
		c := oracleCase{Messages: msgs, AddGenerationPrompt: i%2 == 0}
		if i%3 == 0 {
			d := fmt.Sprintf("%02d %s 20%02d", 1+rng.IntN(28), []string{"Jan", "Feb", "Nov"}[rng.IntN(3)], rng.IntN(100))
			c.DateString = &d
		}
		if c.Messages == nil {
			c.Messages = []Message{}
		}
		cases = append(cases, c)
	}
	return cases
}

// TestRenderMatchesTransformersJS renders 200 conversations with each Llama
// 3.x template, natively and with the npm oracle, and wants equal bytes.
func TestRenderMatchesTransformersJS(t *testing.T) {
	templates := []string{string(testdata.Llama32Template.Read(t)), string(testdata.Llama31Template.Read(t)), llama3Template(t)}
	var cases []oracleCase
	for _, tmpl := range templates {
		for _, c := range conversations() {
			c.Template = tmpl
			cases = append(cases, c)
		}
	}
	want := jsOracle(t, cases)
	bad := 0
	for i, c := range cases {
		opt := Options{AddGenerationPrompt: c.AddGenerationPrompt}
		if c.DateString != nil {
			opt.DateString = *c.DateString
		}
		got, err := RenderTemplate(c.Template, c.Messages, opt)
		if err != nil {
			t.Fatal(err)
		}
		if got != want[i] {
			if bad++; bad <= 5 {
				f, _ := Detect(c.Template)
				t.Errorf("case %d (%v) %+v:\nours:   %q\noracle: %q", i, f, c.Messages, got, want[i])
			}
		}
	}
	t.Logf("%d renderings compared, %d differ", len(cases), bad)
}

func TestPrompt(t *testing.T) {
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	kv, err := llama3vocab.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromKV(kv)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := Prompt(tok, []Message{{Role: "user", Content: "Hi"}}, Options{AddGenerationPrompt: true, DateString: "05 Nov 2026"})
	if err != nil {
		t.Fatal(err)
	}
	// <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n…
	if len(ids) < 4 || ids[0] != 128000 || ids[1] != 128006 || ids[len(ids)-1] != 271 || ids[len(ids)-2] != 128007 {
		t.Fatalf("ids %v", ids)
	}
	n := 0
	for _, id := range ids {
		if id == 128000 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d BOS tokens in %v", n, ids)
	}
}
