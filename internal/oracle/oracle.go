// Package oracle holds the tests' gate on the pinned llama.cpp, the oracle
// that many packages check their output against, and the set-up of its
// model and context.
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

// Context opens the model at path in llama.cpp and a context over it,
// failing tb if either cannot be made; both are closed when tb's test ends.
func Context(tb testing.TB, path string, mo llamacpp.ModelOptions, co llamacpp.ContextOptions) *llamacpp.Context {
	tb.Helper()
	m, c := open(tb, path, mo, co)
	tb.Cleanup(func() { m.Close() })
	tb.Cleanup(func() { c.Close() }) // cleanups run last first: the context before its model
	return c
}

// Logits returns llama.cpp's logits for tokens at positions, from a model
// and context opened for this one evaluation and closed before it returns,
// failing tb on any error.
func Logits(tb testing.TB, path string, mo llamacpp.ModelOptions, co llamacpp.ContextOptions, tokens []int32, positions []int) [][]float32 {
	tb.Helper()
	m, c := open(tb, path, mo, co)
	defer m.Close()
	defer c.Close()
	out, err := c.Logits(tokens, positions)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func open(tb testing.TB, path string, mo llamacpp.ModelOptions, co llamacpp.ContextOptions) (*llamacpp.Model, *llamacpp.Context) {
	tb.Helper()
	m, err := llamacpp.OpenModel(path, mo)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := m.NewContext(co)
	if err != nil {
		m.Close()
		tb.Fatal(err)
	}
	return m, c
}
