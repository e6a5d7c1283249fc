package llamacpp

import (
	"errors"
	"testing"
)

// requireLib skips the test when the pinned llama.cpp is not installed and
// fails it when the libraries are there but libllama does not load.
func requireLib(t testing.TB) {
	t.Helper()
	err := Available()
	switch {
	case errors.Is(err, ErrNotInstalled):
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
}
