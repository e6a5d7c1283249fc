// Package llamabenchtest holds the checks that the tests of the two bench
// harnesses (our engine's, harness/enginebench, and llama.cpp's,
// harness/llamacpp) make alike of a llamabench run.
package llamabenchtest

import (
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
