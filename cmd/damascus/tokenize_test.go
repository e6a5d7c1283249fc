package main

import (
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestTokenizeIDsOnly(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	if out, _ := mustRun(t, "tokenize", "-m", model, "--ids-only", "Once upon a time"); out != "1 403 407 261 378\n" {
		t.Errorf("output %q", out)
	}
	if out, _ := mustRun(t, "tokenize", "Once upon a time", "-m", model, "--ids-only", "--no-bos"); out != "403 407 261 378\n" {
		t.Errorf("--no-bos output %q", out)
	}
}

func TestTokenizeFileAndPieces(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	path := scratchText(t, "Once upon a time\n")
	s, _ := mustRun(t, "tokenize", "-m", model, "--file", path, "--special")
	if !strings.Contains(s, `     1 -> "<s>"`) || !strings.Contains(s, `"\n"`) || !strings.HasSuffix(s, "tokens\n") {
		t.Errorf("output:\n%s", s)
	}
	if code, _, _ := runCLI("tokenize", "-m", model); code != 2 {
		t.Errorf("missing text: exit %d, want 2", code)
	}
}
