package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Helpers the command tests share.

// runCLI runs the command line with args and returns its exit code and
// output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustRun is runCLI for a command line that must succeed: it returns the
// output and stops the test on another exit code.
func mustRun(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("%q: exit %d: %s", args, code, stderr)
	}
	return stdout, stderr
}

// scratchText writes text to a file in a temporary directory and returns
// its path (for --file).
func scratchText(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
