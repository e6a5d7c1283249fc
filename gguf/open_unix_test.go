//go:build unix

package gguf_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/gguf"
)

// A FIFO as the model is refused at once (issue 22): opening it for reading
// used to wait forever for a writer.
func TestOpenRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := gguf.Open(p)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), p+": not a regular file (a named pipe)") {
			t.Errorf("Open(FIFO) = %v, want not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open(FIFO) still blocked after 10s")
	}
}
