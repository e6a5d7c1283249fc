// Package gguftest holds test helpers for code that reads GGUF files.
package gguftest

import (
	"testing"

	"github.com/damascus-llm/damascus/gguf"
)

// Open opens the GGUF file at path, failing t if it cannot, and closes it
// when t's test ends.
func Open(t testing.TB, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
