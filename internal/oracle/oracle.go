// Package oracle holds the tests' gate on the pinned llama.cpp, the oracle
// that many packages check their output against.
package oracle

import (
	"errors"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
)

// RequireLlamaCpp skips tb when the pinned llama.cpp is not installed (make
// baseline installs it) and fails it when it is installed but unusable.
func RequireLlamaCpp(tb testing.TB) {
	tb.Helper()
	if err := llamacpp.Available(); err != nil {
		if errors.Is(err, llamacpp.ErrNotInstalled) {
			tb.Skipf("%v (run make baseline)", err)
		}
		tb.Fatal(err)
	}
}
