package gguf_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/quant"
)

// writeBigTensor writes a file holding a 4-value F32 tensor "small" and
// an n-byte I8 tensor "big" of a byte pattern, returned with the path.
func writeBigTensor(t *testing.T, n int) (path string, big []byte) {
	t.Helper()
	big = make([]byte, n)
	for i := range big {
		big[i] = byte(i*7 + i>>12)
	}
	w := gguf.NewWriter()
	w.Set("general.name", gguf.Str("release"))
	if err := w.AddTensor("small", quant.F32, []uint64{4}, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("big", quant.I8, []uint64{uint64(n)}, big); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "r.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path, big
}

// TestReleasePagesKeepsData: releasing a tensor's pages from the resident
// set leaves its bytes readable and unchanged, and metadata survive Close.
func TestReleasePagesKeepsData(t *testing.T) {
	path, big := writeBigTensor(t, 5<<20+123) // several pages, a ragged end
	f := gguftest.Open(t, path)
	if want := runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1"; f.Mapped() != want {
		t.Errorf("Mapped() = %v on %s", f.Mapped(), runtime.GOOS)
	}
	ti, _ := f.Tensor("big")
	data := f.TensorData(ti)
	if !f.Holds(data) || !f.Holds(data[100:200]) {
		t.Fatal("Holds is false for the file's own tensor data")
	}
	if f.Holds(big) || f.Holds(nil) {
		t.Fatal("Holds is true for memory outside the map")
	}
	for _, b := range [][]byte{data[1:4097], data[:3], data} {
		if err := f.ReleasePages(b); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(data, big) {
		t.Fatal("tensor data changed after ReleasePages")
	}
	if err := f.ReleasePages(big); err == nil && f.Mapped() {
		t.Error("ReleasePages accepted bytes outside the map")
	}
	// A parsed byte slice is not a map: nothing happens, whatever is passed.
	buf := append([]byte(nil), data...)
	g, _ := parseFile(t, path)
	if g.Mapped() {
		t.Error("a Parse'd file says it is mapped")
	}
	if err := g.ReleasePages(g.TensorData(ti)); err != nil || !bytes.Equal(buf, big) {
		t.Errorf("ReleasePages on parsed bytes: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f.Mapped() || f.Holds(data) {
		t.Error("still mapped after Close")
	}
	if s, err := f.String("general.name"); err != nil || s != "release" {
		t.Errorf("metadata after Close: %q, %v", s, err)
	}
}

// parseFile reads the file at path and parses the bytes (no map), failing
// the test if either step fails; it returns the File and the bytes.
func parseFile(t *testing.T, path string) (*gguf.File, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// TestReadInto: a tensor read from the file equals its view, at an odd
// offset and ragged length; bytes from elsewhere are refused; a File parsed
// from bytes copies; a short destination is an error.
func TestReadInto(t *testing.T) {
	path, data := writeBigTensor(t, 3<<20+77)
	f := gguftest.Open(t, path)
	ti, _ := f.Tensor("big")
	view := f.TensorData(ti)
	part := view[12345 : len(view)-9]
	dst := make([]byte, len(part)+5)
	if err := f.ReadInto(dst, part); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst[:len(part)], data[12345:len(data)-9]) {
		t.Error("ReadInto: bytes differ from the tensor's")
	}
	if err := f.ReadInto(dst, data[:10]); err == nil {
		t.Error("bytes outside the file: no error")
	}
	if err := f.ReadInto(dst[:3], part); err == nil {
		t.Error("short destination: no error")
	}
	parsed, _ := parseFile(t, path)
	pv := parsed.TensorData(ti)
	whole := make([]byte, len(pv))
	if err := parsed.ReadInto(whole, pv); err != nil || !bytes.Equal(whole, data) {
		t.Errorf("a parsed File: %v, equal %v", err, bytes.Equal(whole, data))
	}
}
