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

func TestLibDirMissing(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	if _, err := LibDir(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("LibDir with an empty %s: got %v, want ErrNotInstalled", DirEnv, err)
	}
	if ErrNotInstalled.Error() != "llama.cpp baseline not installed: run make baseline" {
		t.Errorf("ErrNotInstalled says %q", ErrNotInstalled)
	}
}
