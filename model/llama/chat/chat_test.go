package chat

import (
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestLlama3Render(t *testing.T) {
	src := testdata.Llama32Template.Read(t)
	tmpl, err := Detect(string(src), "")
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Name() != "llama3" {
		t.Fatalf("detected %s", tmpl.Name())
	}
	got := tmpl.Render([]Message{{"system", "Be brief."}, {"user", " Hi! "}}, true)
	want := "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestDetectRefusesUnknown(t *testing.T) {
	if _, err := Detect("{{ messages }}", ""); err == nil {
		t.Error("an unrecognised template was accepted")
	}
	if _, err := Detect("", ""); err == nil {
		t.Error("a missing template was accepted")
	}
	if tm, err := Detect("", "chatml"); err != nil || tm.Render([]Message{{"user", "x"}}, true) != "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("chatml by name: %v", err)
	}
}
