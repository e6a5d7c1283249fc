package dl

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGoString(t *testing.T) {
	b := []byte("ggml\x00rest")
	if got := GoString(&b[0]); got != "ggml" {
		t.Errorf("GoString = %q, want ggml", got)
	}
	if got := GoString(nil); got != "" {
		t.Errorf("GoString(nil) = %q", got)
	}
}

func TestFindUp(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "a", "lib")
	deep := filepath.Join(root, "x", "y", "z")
	for _, d := range []string{lib, deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lib, "libx.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := FindUp([]string{deep}, "a/lib", "libx.so"); got != lib {
		t.Errorf("FindUp = %q, want %q", got, lib)
	}
	if got := FindUp([]string{deep}, "a/lib", "liby.so"); got != "" {
		t.Errorf("FindUp of a missing marker = %q", got)
	}
	if FileExists(lib) || !FileExists(filepath.Join(lib, "libx.so")) {
		t.Error("FileExists confuses files and directories")
	}
}

func TestBinderKeepsFirstError(t *testing.T) {
	var b Binder
	var f func()
	b.Bind(0, "no_such_symbol_anywhere", &f)
	if b.Err == nil {
		t.Fatal("a missing symbol bound without error")
	}
	first := b.Err
	b.Bind(0, "another_missing_symbol", &f)
	if b.Err != first {
		t.Errorf("the first error was replaced: %v", b.Err)
	}
}

func TestFieldOffsets(t *testing.T) {
	type s struct {
		a int8
		_ [3]byte
		b int32
		c int64
	}
	got := FieldOffsets(s{})
	if len(got) != 3 || got[0] != 0 || got[1] != 4 || got[2] != 8 {
		t.Errorf("FieldOffsets = %v, want [0 4 8]", got)
	}
}
