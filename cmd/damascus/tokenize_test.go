package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestTokenizeIDsOnly(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	var out, errb bytes.Buffer
	if code := run([]string{"tokenize", "-m", model, "--ids-only", "Once upon a time"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != "1 403 407 261 378\n" {
		t.Errorf("output %q", out.String())
	}
	out.Reset()
	if code := run([]string{"tokenize", "Once upon a time", "-m", model, "--ids-only", "--no-bos"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != "403 407 261 378\n" {
		t.Errorf("--no-bos output %q", out.String())
	}
}

func TestTokenizeFileAndPieces(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	path := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(path, []byte("Once upon a time\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"tokenize", "-m", model, "--file", path, "--special"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	if !strings.Contains(s, `     1 -> "<s>"`) || !strings.Contains(s, `"\n"`) || !strings.HasSuffix(s, "tokens\n") {
		t.Errorf("output:\n%s", s)
	}
	if code := run([]string{"tokenize", "-m", model}, &out, &errb); code != 2 {
		t.Errorf("missing text: exit %d, want 2", code)
	}
}
