package textfile

import (
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	model := func(line string) (string, bool) {
		k, v, ok := strings.Cut(line, ":")
		return strings.TrimSpace(v), ok && strings.TrimSpace(k) == "model name"
	}
	if got := Find("testdata/cpuinfo", model); got != "A" {
		t.Errorf("Find(model name) = %q, want the first, A", got)
	}
	if got := Find("testdata/cpuinfo", func(string) (string, bool) { return "x", false }); got != "" {
		t.Errorf("Find(no match) = %q, want empty", got)
	}
	if got := Find("testdata/none", model); got != "" {
		t.Errorf("Find(missing file) = %q, want empty", got)
	}
}
