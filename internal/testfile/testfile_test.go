package testfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOnceWritesOnceAndRemoves(t *testing.T) {
	writes := 0
	f := New("x.txt", func(path string) error {
		writes++
		return os.WriteFile(path, []byte("x"), 0o644)
	})
	p1, err := f.Path()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := f.Path()
	if err != nil || p2 != p1 || writes != 1 || filepath.Base(p1) != "x.txt" {
		t.Fatalf("second Path = %q, %v after %d writes; want %q, nil after 1", p2, err, writes, p1)
	}
	if b, err := os.ReadFile(p1); err != nil || string(b) != "x" {
		t.Fatalf("file holds %q, %v", b, err)
	}
	f.Remove()
	if _, err := os.Stat(filepath.Dir(p1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory still there after Remove: %v", err)
	}
}

func TestOnceKeepsItsError(t *testing.T) {
	bad := errors.New("no")
	f := New("y", func(string) error { return bad })
	for range 2 {
		if _, err := f.Path(); err != bad {
			t.Fatalf("Path error %v, want %v", err, bad)
		}
	}
	f.Remove()
}
