package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/tokenizertest"
)

// Every golden of goldens.json through the command line: run.c's steps
// count positions including BOS, so the tokens to generate are
// steps − len(prompt with BOS) + 1; the goldens include the prompt (--echo).
func TestGenerateGoldens(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	cases, err := testdata.Goldens(t)
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizertest.Open(t, model)
	for i, c := range cases {
		ids, err := tok.Encode(c.Prompt, tokenizer.AddSpecial)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"generate", "-m", model, "-p", c.Prompt, "--echo", "--llama2c", "--threads", "2",
			"-n", fmt.Sprint(c.Steps - len(ids) + 1), "--temp", fmt.Sprint(c.Temperature)}
		if c.TopP != nil {
			args = append(args, "--top-p", fmt.Sprint(*c.TopP))
		}
		if c.Seed != nil {
			args = append(args, "--seed", fmt.Sprint(*c.Seed))
		}
		if got, _ := mustRun(t, args...); got != c.Expected {
			t.Errorf("case %d: %v\n got %q\nwant %q", i, args, got, c.Expected)
		}
	}
}

// Greedy decoding needs no llama2.c mode: the default sampler chain with
// --temp 0 is argmax too.
func TestGenerateGreedyDefaultSampler(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	stdout, stderr := mustRun(t, "generate", "-m", model, "--temp", "0", "-n", "60", "-p", "Once upon a time", "--echo")
	want := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily"
	if stdout != want {
		t.Errorf("got %q\nwant %q", stdout, want)
	}
	if !strings.Contains(stderr, "tokens per second") {
		t.Errorf("no timing summary on stderr: %q", stderr)
	}
}

func TestGenerateContextOverflow(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	rc, _, stderr := runCLI("generate", "-m", model, "--ctx-size", "16", "-n", "20")
	if rc == 0 || !strings.Contains(stderr, "context length 16") {
		t.Errorf("exit %d, stderr %q: want an error naming the context length", rc, stderr)
	}
}

// --json: whatever the model, the text is a prefix of one JSON object
// (encoding/json finds no syntax error in it, only its end), an object
// when generation stopped; --llama2c's sampler cannot take it.
func TestGenerateJSON(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	for _, seed := range []string{"1", "2"} {
		stdout, stderr := mustRun(t, "generate", "-m", model, "--json", "--seed", seed, "-n", "60", "-p", "Once upon a time")
		if !strings.HasPrefix(stdout, "{") {
			t.Fatalf("seed %s: %q does not open an object", seed, stdout)
		}
		if strings.Contains(stderr, "stop token") && !json.Valid([]byte(stdout)) {
			t.Errorf("seed %s: stopped at %q, not a JSON object", seed, stdout)
		}
		dec := json.NewDecoder(strings.NewReader(stdout))
		for {
			if _, err := dec.Token(); err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Errorf("seed %s: %q is not a prefix of JSON: %v", seed, stdout, err)
				}
				break
			}
		}
	}
	if rc, _, stderr := runCLI("generate", "-m", model, "--json", "--llama2c", "-n", "4"); rc == 0 || !strings.Contains(stderr, "constrain llama.cpp's sampler chain") {
		t.Errorf("--json --llama2c: exit %d, %q", rc, stderr)
	}
	// A schema: booleans and an enum only, so even this model completes it.
	stdout, _ := mustRun(t, "generate", "-m", model, "--seed", "3", "-n", "80", "-p", "Once",
		"--json-schema", `{"type":"object","properties":{"happy":{"type":"boolean"},"pet":{"enum":["cat","dog"]}},"required":["happy","pet"]}`)
	var got struct {
		Happy *bool   `json:"happy"`
		Pet   *string `json:"pet"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if dec.Decode(&got) != nil || got.Happy == nil || got.Pet == nil || (*got.Pet != "cat" && *got.Pet != "dog") {
		t.Errorf("--json-schema: %q is not valid under the schema", stdout)
	}
	if rc, _, stderr := runCLI("generate", "-m", model, "--json-schema", `{"type":"string"}`, "-n", "4"); rc == 0 || !strings.Contains(stderr, "--json-schema: schema: the root must be") {
		t.Errorf("--json-schema with a string root: exit %d, %q", rc, stderr)
	}
}
