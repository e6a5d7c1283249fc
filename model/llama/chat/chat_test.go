package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/internal/testdata"
)

// Meta's 3.1 and 3.2 templates are recognised exactly (the Meta renderer,
// tools included); another template with Llama 3 markers renders in
// llama.cpp's llama3 format.
func TestDetect(t *testing.T) {
	for tmpl, want := range map[string]string{
		string(testdata.Llama32Template.Read(t)):                "llama3.2",
		string(testdata.Llama31Template.Read(t)):                "llama3.1",
		"{{ '<|start_header_id|>' + m + '<|end_header_id|>' }}": "llama3",
		"{{ '<|im_start|>' }}":                                  "chatml",
	} {
		got, err := Detect(tmpl, "")
		if err != nil || got.Name() != want {
			t.Errorf("Detect(%.40q) = %v, %v; want %s", tmpl, got, err, want)
		}
		_, tools := got.(ToolTemplate)
		if tools != strings.HasPrefix(want, "llama3.") {
			t.Errorf("%s: renders tools %v", want, tools)
		}
	}
}

func TestLlama3Render(t *testing.T) {
	tmpl, err := Detect("", "llama3")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render([]Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: " Hi! "}}, true)
	want := "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n"
	if err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	for _, name := range []string{"llama3", "chatml"} {
		tm, _ := Detect("", name)
		if _, err := tm.Render([]Message{{Role: "user", Content: "x"}, {Role: "tool", Content: "{}"}}, true); err == nil {
			t.Errorf("%s rendered a tool result", name)
		}
	}
}

// The Llama 3.2 template: the system turn with the dates (today's), no BOS
// (the tokenizer adds it); with a tool, the tool in the first user turn and
// a call and its result.
func TestMetaRender(t *testing.T) {
	m, ok := WithClock(formats[2], func() time.Time { return time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC) }).(meta)
	if !ok || WithClock(formats[0], time.Now) != formats[0] {
		t.Fatal("WithClock: a Meta template not kept as one, or another template changed")
	}
	got, err := m.Render([]Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: " Hi! "}}, true)
	want := "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 05 Dec 2026\n\nBe brief.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n"
	if err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	tool := json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}`)
	msgs := []Message{{Role: "user", Content: "Call f."}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}}, {Role: "tool", Content: "ok"}}
	got, err = m.RenderTools(msgs, []json.RawMessage{tool}, false)
	for _, part := range []string{
		"system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date",
		"Do not use variables.\n\n{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"f\",",
		"}\n\nCall f.<|eot_id|>",
		"<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"f\", \"parameters\": {\"x\": 1}}<|eot_id|>",
		"<|start_header_id|>ipython<|end_header_id|>\n\n\"ok\"<|eot_id|>",
	} {
		if err != nil || !strings.Contains(got, part) {
			t.Errorf("RenderTools: %v; %q lacks %q", err, got, part)
		}
	}
	if strings.HasPrefix(got, "<|begin_of_text|>") {
		t.Error("BOS rendered")
	}
}

func TestDetectRefusesUnknown(t *testing.T) {
	if _, err := Detect("{{ messages }}", ""); err == nil {
		t.Error("an unrecognised template was accepted")
	}
	if _, err := Detect("", ""); err == nil {
		t.Error("a missing template was accepted")
	}
	if _, err := Detect("", "llama4"); err == nil {
		t.Error("an unknown format name was accepted")
	}
	tm, err := Detect("", "chatml")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tm.Render([]Message{{Role: "user", Content: "x"}}, true); got != "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("chatml by name: %q", got)
	}
}
