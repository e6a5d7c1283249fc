// Package llamabenchtest holds the checks that the tests of the two bench
// harnesses (our engine's, harness/enginebench, and llama.cpp's,
// harness/llamacpp) make alike of a llamabench run.
package llamabenchtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamabench"
)

// CheckDepth fails t unless tests are the two tests of a run of prompt 8,
// generation 4 at depth 40 (pp8@d40, then tg4@d40), each with reps
// samples: both harnesses name and repeat llama-bench's "@d" tests so.
func CheckDepth(t testing.TB, tests []llamabench.Test, reps int) {
	t.Helper()
	if len(tests) != 2 || tests[0].Name != "pp8@d40" || tests[1].Name != "tg4@d40" {
		t.Fatalf("tests %+v; want pp8@d40 and tg4@d40", tests)
	}
	for _, bt := range tests {
		if len(bt.TokensPerSec) != reps {
			t.Errorf("%s: %d samples, want %d", bt.Name, len(bt.TokensPerSec), reps)
		}
	}
}

// CheckSnapshot runs a depth-40 bench twice with its depth snapshots in
// one directory (run(dir), a run as CheckDepth expects): the first fills
// each test's depth and writes a snapshot, the second reads them, and the
// directory holds the two snapshots and nothing else.
func CheckSnapshot(t testing.TB, reps int, run func(dir string) ([]llamabench.Test, error)) {
	t.Helper()
	dir := t.TempDir()
	for i, want := range []string{"filled, snapshot written", "snapshot read"} {
		tests, err := run(dir)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		CheckDepth(t, tests, reps)
		for _, bt := range tests {
			if bt.Depth != want {
				t.Errorf("run %d, %s: depth %q, want %q", i+1, bt.Name, bt.Depth, want)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) != 2 {
		t.Errorf("snapshot directory holds %v (%v), want the two tests' snapshots", files, err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".kv") {
			t.Errorf("snapshot directory holds %s", f)
		}
	}
}
