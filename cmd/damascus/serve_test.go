package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// --api-key's list and --api-key-file's lines make the keys; a file that
// cannot be read or holds none is an error naming it.
func TestAPIKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte("# team keys\nk3\n\n  k4  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := apiKeys(" k1, ,k2", file)
	if err != nil || !slices.Equal(keys, []string{"k1", "k2", "k3", "k4"}) {
		t.Errorf("keys %q, %v", keys, err)
	}
	if keys, err := apiKeys("", ""); err != nil || keys != nil {
		t.Errorf("no keys: %q, %v", keys, err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("# none yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{empty, filepath.Join(dir, "missing")} {
		if _, err := apiKeys("", f); err == nil || !strings.Contains(err.Error(), "--api-key-file") {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestAllowOrigins(t *testing.T) {
	got, err := allowOrigins(" http://localhost:3000, https://chat.example.org/ ,*")
	if err != nil || !slices.Equal(got, []string{"http://localhost:3000", "https://chat.example.org", "*"}) {
		t.Errorf("origins %q, %v", got, err)
	}
	for _, bad := range []string{"localhost:3000", "ftp://x", "http://x/path", "http://", "http://u@x"} {
		if _, err := allowOrigins(bad); err == nil || !strings.Contains(err.Error(), "--allow-origin") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
