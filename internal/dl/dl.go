// Package dl is what the project's purego bindings of C libraries share
// (the pinned llama.cpp's libggml and libllama, CUDA's libcuda and
// libnvrtc): opening a library, binding its symbols to Go function
// variables, finding an installed library directory and reading C strings.
package dl

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Open loads the shared library at path with its symbols resolved now and
// visible to the libraries loaded after it (RTLD_NOW|RTLD_GLOBAL).
func Open(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// A Binder resolves symbols into Go function variables, keeping the first
// error so that a run of Bind calls is checked once.
type Binder struct{ Err error }

// Bind points the function variable *fptr at the symbol name of handle.
func (b *Binder) Bind(handle uintptr, name string, fptr any) {
	if b.Err != nil {
		return
	}
	sym, err := purego.Dlsym(handle, name)
	if err != nil {
		b.Err = fmt.Errorf("missing symbol %s: %w", name, err)
		return
	}
	purego.RegisterFunc(fptr, sym)
}

// FindUp returns the first directory rel below one of starts or their
// parents (each walked up to the file system's root) that holds the file
// marker, or "" when none does.
func FindUp(starts []string, rel, marker string) string {
	for _, s := range starts {
		for dir := s; ; dir = filepath.Dir(dir) {
			if cand := filepath.Join(dir, rel); FileExists(filepath.Join(cand, marker)) {
				return cand
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return ""
}

// FileExists reports whether p names a file that is not a directory.
func FileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// GoString copies the NUL-terminated C string at p ("" for nil).
func GoString(p *byte) string {
	if p == nil {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// FieldOffsets lists the offsets of a struct's fields, blank padding
// fields ("_") left out: what a Go mirror of a C struct is checked against
// the offsets the C compiler reports.
func FieldOffsets(v any) []uintptr {
	typ := reflect.TypeOf(v)
	var off []uintptr
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Name != "_" {
			off = append(off, f.Offset)
		}
	}
	return off
}
