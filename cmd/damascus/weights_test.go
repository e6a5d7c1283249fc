package main

import (
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

// TestWeightsFlag: the commands that load a model place its weights on huge
// pages by default and in the file map with --weights mmap, with the same
// output; an unknown placement is a usage error.
func TestWeightsFlag(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	for _, cmd := range [][]string{
		{"predict", "-m", model, "Once upon a time"},
		{"generate", "-m", model, "-p", "Once upon a time", "-n", "24", "--temp", "0", "--threads", "1"},
	} {
		var outs []string
		for _, w := range [][]string{nil, {"--weights", "huge"}, {"--weights", "mmap"}} {
			code, out, errOut := runCLI(append(append([]string(nil), cmd...), w...)...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d: %s", cmd[0], w, code, errOut)
			}
			if strings.Contains(errOut, "weights stay in the file map") {
				t.Logf("%s %v: %s", cmd[0], w, strings.SplitN(errOut, "\n", 2)[0])
			}
			outs = append(outs, out)
		}
		if outs[0] != outs[1] || outs[1] != outs[2] {
			t.Errorf("%s: output differs by placement:\ndefault: %q\nhuge:    %q\nmmap:    %q", cmd[0], outs[0], outs[1], outs[2])
		}
	}
	if code, _, errOut := runCLI("predict", "-m", model, "--weights", "hugetlbfs", "x"); code == 0 || !strings.Contains(errOut, "--weights") {
		t.Errorf("--weights hugetlbfs: exit %d, stderr %q", code, errOut)
	}
}
