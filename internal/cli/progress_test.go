package cli

import (
	"bytes"
	"strings"
	"testing"
)

// Written to a file or a pipe, a progress report is a few plain lines, not
// carriage-return redraws: one at the start, one per tenth, none repeated.
func TestProgressPlainWhenNotATerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, 1000, "gate", false)
	for i := range 1000 {
		p.Set(int64(i+1), "gate op")
	}
	p.Finish()
	out := b.String()
	if strings.Contains(out, "\r") {
		t.Fatalf("carriage returns in non-terminal output:\n%q", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 11 {
		t.Fatalf("%d lines, want 11 (start and each tenth):\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[0], "gate: 0/1000 (0%)") || !strings.HasPrefix(lines[10], "gate op: 1000/1000 (100%)") {
		t.Errorf("first or last line wrong:\n%s", out)
	}
}

func TestProgressBytesAndEmptyTotal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, 3<<20, "synth", true)
	p.Add(3 << 20)
	p.Finish()
	if !strings.Contains(b.String(), "3.0/3.0 MiB (100%)") {
		t.Errorf("bytes progress:\n%s", b.String())
	}
	b.Reset()
	p = NewProgress(&b, 0, "nothing", false)
	p.Finish()
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Errorf("empty total: %d lines, want 1:\n%s", n, b.String())
	}
}
