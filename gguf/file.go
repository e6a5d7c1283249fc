// Package gguf reads and writes GGUF files, ggml's model format: a header,
// typed metadata, a tensor directory and aligned tensor data.
//
// The reader maps the file read-only and hands out tensor data as views into
// the map, never copies. It validates everything it reads before allocating
// for it, so a truncated, corrupted or hostile file gives a *FormatError
// naming the problem and its byte offset, never a panic or a huge allocation.
// Versions 2 and 3 are read; the writer writes version 3.
package gguf

import (
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"

	"github.com/damascus-llm/damascus/quant"
)

// A File is a parsed GGUF file.
type File struct {
	Version    uint32
	KV         []KV         // metadata in file order
	Tensors    []TensorInfo // tensor directory in file order
	Alignment  uint64       // of tensor data: general.alignment, or DefaultAlignment
	DataOffset uint64       // file offset where tensor data start

	data        []byte
	size        int64
	unmap       func() error
	mapped      bool     // data is a read-only shared memory map of the file
	fd          *os.File // the file Open mapped, kept open for ReadInto until Close
	kvIndex     map[string]int
	tensorIndex map[string]int
}

// A TensorInfo describes one tensor: its shape (ne0, the contiguous
// dimension, first, as stored), type, and where its data lie.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   quant.Type
	Offset uint64 // from File.DataOffset
	Size   uint64 // bytes
}

// Elements returns the number of values in the tensor.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Open maps the file at path read-only and parses it. Close releases the
// map; tensor data returned by TensorData are invalid after Close, metadata
// stays valid.
func Open(path string) (*File, error) {
	data, fd, unmap, mapped, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap, f.mapped, f.fd = unmap, mapped, fd
	return f, nil
}

// Close releases the file's memory map, if any. It is safe to call twice.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.data, f.mapped, f.fd = nil, nil, false, nil
	return err
}

// Mapped reports whether f's tensor data are a memory map of the file
// (Open on unix, until Close), the only case where ReleasePages acts.
func (f *File) Mapped() bool { return f.mapped }

// Holds reports whether b (not empty) lies in f's data, as the views
// TensorData returns do until Close.
func (f *File) Holds(b []byte) bool {
	_, ok := f.offsetOf(b)
	return ok
}

// offsetOf returns where b starts in f's data, if b lies entirely in it.
func (f *File) offsetOf(b []byte) (uintptr, bool) {
	if len(b) == 0 || len(f.data) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if start < base || start-base >= uintptr(len(f.data)) || uintptr(len(b)) > uintptr(len(f.data))-(start-base) {
		return 0, false
	}
	return start - base, true
}

// ReleasePages drops the pages under b, a view into f's data (from
// TensorData), from this process's resident set: madvise(MADV_DONTNEED) on
// the read-only shared file map, rounded out to whole pages. Nothing is lost,
// neither b nor the neighbouring bytes on its first and last pages: touching
// them again maps them back from the page cache, or reads them from the file.
// The page cache itself is left alone. A copy of the weights calls it as it
// goes so that the copy and the file pages it was made from are not both
// resident. Where f is not a memory map (a Parse of bytes, a system without
// mmap) and on systems other than linux it does nothing; b outside f's data
// is an error.
func (f *File) ReleasePages(b []byte) error {
	if !f.mapped || len(b) == 0 {
		return nil
	}
	off, ok := f.offsetOf(b)
	if !ok {
		return errors.New("gguf: ReleasePages: the bytes are not in the file's map")
	}
	ps := uintptr(pageSize)
	lo := off &^ (ps - 1) // the map starts on a page boundary
	hi := min((off+uintptr(len(b))+ps-1)&^(ps-1), uintptr(len(f.data)))
	if err := releasePages(f.data[lo:hi]); err != nil {
		return fmt.Errorf("gguf: releasing pages: %w", err)
	}
	return nil
}

// ReadInto fills dst[:len(b)] with b, a view into f's data (from
// TensorData), by reading the file rather than touching the view: the
// map's pages never enter this process's resident set, and the kernel
// copies from the page cache in large reads instead of faulting the map in
// page by page (a 1B's cold start: results/, run 20261130T010840Z-03f673).
// Without a file to read (a Parse of bytes) it copies.
func (f *File) ReadInto(dst, b []byte) error {
	if len(dst) < len(b) {
		return fmt.Errorf("gguf: ReadInto: %d bytes into %d", len(b), len(dst))
	}
	off, ok := f.offsetOf(b)
	if !ok {
		if len(b) == 0 {
			return nil
		}
		return errors.New("gguf: ReadInto: the bytes are not in the file's data")
	}
	if f.fd == nil {
		copy(dst, b)
		return nil
	}
	if _, err := f.fd.ReadAt(dst[:len(b)], int64(off)); err != nil {
		return fmt.Errorf("gguf: ReadInto %s at %d: %w", f.fd.Name(), off, err)
	}
	return nil
}

// Size returns the length of the file in bytes.
func (f *File) Size() int64 { return f.size }

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns t's bytes: a read-only view into the file (writing to
// it faults). t must be one of f.Tensors.
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + t.Offset
	end := start + t.Size
	return f.data[start:end:end]
}

var pageSize = os.Getpagesize()

// ErrKeyNotFound is wrapped by the typed getters' errors for a missing key.
var ErrKeyNotFound = errors.New("not found")

// Lookup returns the value of key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Has reports whether the file has metadata key.
func (f *File) Has(key string) bool {
	_, ok := f.kvIndex[key]
	return ok
}

func (f *File) get(key string) (Value, error) {
	v, ok := f.Lookup(key)
	if !ok {
		return Value{}, fmt.Errorf("gguf: key %q: %w", key, ErrKeyNotFound)
	}
	return v, nil
}

func wrongType(key string, v Value, want string) error {
	return fmt.Errorf("gguf: key %q is %s, want %s", key, v.typeName(), want)
}

// String returns the string value of key.
func (f *File) String(key string) (string, error) {
	return typed(f, key, Value.Str, wrongType, "str")
}

// Uint64 returns the value of key, which may have any integer type whose
// value is not negative.
func (f *File) Uint64(key string) (uint64, error) {
	return typed(f, key, Value.Uint64, outOfRange, "an unsigned integer")
}

// Uint32 returns the value of key, which may have any integer type whose
// value fits in a uint32.
func (f *File) Uint32(key string) (uint32, error) {
	x, err := f.Uint64(key)
	if err != nil {
		return 0, err
	}
	if x > math.MaxUint32 {
		v, _ := f.Lookup(key)
		return 0, outOfRange(key, v, "a u32")
	}
	return uint32(x), nil
}

// Int64 returns the value of key, which may have any integer type whose
// value fits in an int64.
func (f *File) Int64(key string) (int64, error) {
	return typed(f, key, Value.Int64, outOfRange, "an i64")
}

func outOfRange(key string, v Value, want string) error {
	if v.typ.isSigned() || v.typ.isUnsigned() {
		return fmt.Errorf("gguf: key %q is %s %s, want %s", key, v.typ, v, want)
	}
	return wrongType(key, v, want)
}

// Float64 returns the value of key, which may be f32 or f64.
func (f *File) Float64(key string) (float64, error) {
	return typed(f, key, Value.Float64, wrongType, "f32 or f64")
}

// Float32 returns the value of key, which may be f32 or f64 (rounded).
func (f *File) Float32(key string) (float32, error) {
	x, err := f.Float64(key)
	return float32(x), err
}

// Bool returns the bool value of key.
func (f *File) Bool(key string) (bool, error) {
	return typed(f, key, Value.Bool, wrongType, "bool")
}

// ArrayLen returns the number of elements of the array value of key.
func (f *File) ArrayLen(key string) (int, error) {
	return typed(f, key, func(v Value) (int, bool) { return v.Len(), v.typ == TypeArray }, wrongType, "an array")
}

// Strings returns the []str value of key. The slice is shared: do not modify it.
func (f *File) Strings(key string) ([]string, error) {
	return arrayValue[string](f, key, "[]str")
}

// Float32s returns the []f32 value of key. The slice is shared: do not modify it.
func (f *File) Float32s(key string) ([]float32, error) {
	return arrayValue[float32](f, key, "[]f32")
}

// Int32s returns the []i32 value of key. The slice is shared: do not modify it.
func (f *File) Int32s(key string) ([]int32, error) {
	return arrayValue[int32](f, key, "[]i32")
}

func arrayValue[T any](f *File, key, want string) ([]T, error) {
	return typed(f, key, func(v Value) ([]T, bool) { s, ok := v.Slice().([]T); return s, ok }, wrongType, want)
}

// typed is the typed getters' common part: the value of key as as reads it,
// or the error bad gives for a value as refuses (want names what it takes).
func typed[T any](f *File, key string, as func(Value) (T, bool), bad func(key string, v Value, want string) error, want string) (T, error) {
	var zero T
	v, err := f.get(key)
	if err != nil {
		return zero, err
	}
	x, ok := as(v)
	if !ok {
		return zero, bad(key, v, want)
	}
	return x, nil
}
