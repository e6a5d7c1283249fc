package gguf_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/damascus-llm/damascus/model/gguf"
	"github.com/damascus-llm/damascus/model/quant"
)

// TestReleasePagesKeepsData: releasing a tensor's pages from the resident
// set leaves its bytes readable and unchanged, and metadata survive Close.
func TestReleasePagesKeepsData(t *testing.T) {
	big := make([]byte, 5<<20+123) // several pages, a ragged end
	for i := range big {
		big[i] = byte(i*7 + i>>12)
	}
	w := gguf.NewWriter()
	w.Set("general.name", gguf.Str("release"))
	if err := w.AddTensor("small", quant.F32, []uint64{4}, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("big", quant.I8, []uint64{uint64(len(big))}, big); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
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
	g, err := gguf.Parse(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
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

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
