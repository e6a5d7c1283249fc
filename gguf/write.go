package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/quant"
)

// A Writer builds a GGUF version 3 file: metadata in the order first set,
// then tensors in the order added. Tensor data may be streamed
// (AddTensorFunc), so files larger than memory can be written.
//
// Files with arrays of arrays are valid GGUF but llama.cpp refuses them.
type Writer struct {
	kv          []KV
	kvIndex     map[string]int
	tensors     []pendingTensor
	tensorIndex map[string]bool
}

type pendingTensor struct {
	info  TensorInfo
	write func(io.Writer) error
}

// NewWriter returns an empty writer.
func NewWriter() *Writer {
	return &Writer{kvIndex: map[string]int{}, tensorIndex: map[string]bool{}}
}

// Set sets metadata key to v. Setting a key again replaces its value and
// keeps its place.
func (w *Writer) Set(key string, v Value) {
	if i, ok := w.kvIndex[key]; ok {
		w.kv[i].Value = v
		return
	}
	w.kvIndex[key] = len(w.kv)
	w.kv = append(w.kv, KV{Key: key, Value: v})
}

// SetAlignment sets the alignment of tensor data (general.alignment). It
// must be a power of two; WriteTo reports it otherwise.
func (w *Writer) SetAlignment(n uint32) { w.Set(AlignmentKey, U32(n)) }

// AddTensor adds a tensor whose data are in memory. data must be exactly
// the tensor's size; the writer keeps data until it is written.
func (w *Writer) AddTensor(name string, typ quant.Type, dims []uint64, data []byte) error {
	return w.AddTensorFunc(name, typ, dims, uint64(len(data)), func(out io.Writer) error {
		_, err := out.Write(data)
		return err
	})
}

// AddTensorFunc adds a tensor of size bytes whose data write produces when
// the file is written. write must write exactly size bytes.
func (w *Writer) AddTensorFunc(name string, typ quant.Type, dims []uint64, size uint64, write func(io.Writer) error) error {
	if name == "" {
		return errors.New("gguf: tensor name is empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("gguf: tensor name %q is %d bytes long, more than %d", name, len(name), MaxNameLen)
	}
	if w.tensorIndex[name] {
		return fmt.Errorf("gguf: duplicate tensor %q", name)
	}
	want, err := tensorSize(typ, dims)
	if err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	if size != want {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d for %s %v", name, size, want, typ, dims)
	}
	w.tensorIndex[name] = true
	w.tensors = append(w.tensors, pendingTensor{
		info:  TensorInfo{Name: name, Dims: slices.Clone(dims), Type: typ, Size: size},
		write: write,
	})
	return nil
}

func (w *Writer) alignment() (uint64, error) {
	i, ok := w.kvIndex[AlignmentKey]
	if !ok {
		return DefaultAlignment, nil
	}
	v := w.kv[i].Value
	if v.typ != TypeUint32 {
		return 0, fmt.Errorf("gguf: %s is %s, want u32", AlignmentKey, v.typeName())
	}
	if v.num == 0 || v.num&(v.num-1) != 0 {
		return 0, fmt.Errorf("gguf: %s is %d, not a power of two", AlignmentKey, v.num)
	}
	return v.num, nil
}

func (w *Writer) check() error {
	for _, kv := range w.kv {
		if kv.Key == "" {
			return errors.New("gguf: empty metadata key")
		}
		if len(kv.Key) > MaxKeyLen {
			return fmt.Errorf("gguf: metadata key %.40q… is %d bytes long, more than %d", kv.Key, len(kv.Key), MaxKeyLen)
		}
		if depth(kv.Value) > MaxArrayNesting {
			return fmt.Errorf("gguf: key %q: arrays nested more than %d deep", kv.Key, MaxArrayNesting)
		}
	}
	return nil
}

func depth(v Value) int {
	vs, ok := v.arr.([]Value)
	if !ok {
		if v.typ == TypeArray {
			return 1
		}
		return 0
	}
	d := 0
	for _, e := range vs {
		d = max(d, depth(e))
	}
	return 1 + d
}

// WriteTo writes the file to out.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	align, err := w.alignment()
	if err != nil {
		return 0, err
	}
	if err := w.check(); err != nil {
		return 0, err
	}
	var off uint64
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		off = alignUp(off+t.Size, align)
	}

	bw := bufio.NewWriterSize(out, 64<<10)
	e := &encoder{w: bw}
	e.write([]byte(magic))
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kv)))
	for _, kv := range w.kv {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		e.payload(kv.Value)
	}
	for _, t := range w.tensors {
		e.str(t.info.Name)
		e.u32(uint32(len(t.info.Dims)))
		for _, d := range t.info.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.info.Type))
		e.u64(t.info.Offset)
	}
	if len(w.tensors) > 0 { // there is no data section to align otherwise
		e.pad(align)
	}
	for _, t := range w.tensors {
		if e.err != nil {
			break
		}
		tw := &tensorWriter{e: e, left: t.info.Size}
		if err := t.write(tw); err != nil {
			return e.n, fmt.Errorf("gguf: writing tensor %q: %w", t.info.Name, err)
		}
		if e.err == nil && tw.left != 0 {
			return e.n, fmt.Errorf("gguf: tensor %q: wrote %d bytes, want %d", t.info.Name, t.info.Size-tw.left, t.info.Size)
		}
		e.pad(align)
	}
	if e.err == nil {
		e.err = bw.Flush()
	}
	return e.n, e.err
}

// WriteFile writes the file to path, through a temporary file in the same
// folder so that a failed write leaves no partial file at path. A path that
// is not a regular file (a device, a FIFO), or that is one of inputs (the
// files the caller read to make this one), is refused (see outfile.Create).
func (w *Writer) WriteFile(path string, inputs ...string) error {
	return outfile.Write(path, func(out io.Writer) error {
		_, err := w.WriteTo(out)
		return err
	}, inputs...)
}

func alignUp(n, align uint64) uint64 { return (n + align - 1) &^ (align - 1) }

// An encoder writes little-endian fields, counting bytes and keeping the
// first error.
type encoder struct {
	w       io.Writer
	n       int64
	err     error
	scratch [8]byte
}

func (e *encoder) write(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) u8(x uint8) { e.scratch[0] = x; e.write(e.scratch[:1]) }
func (e *encoder) u16(x uint16) {
	binary.LittleEndian.PutUint16(e.scratch[:], x)
	e.write(e.scratch[:2])
}
func (e *encoder) u32(x uint32) {
	binary.LittleEndian.PutUint32(e.scratch[:], x)
	e.write(e.scratch[:4])
}
func (e *encoder) u64(x uint64) {
	binary.LittleEndian.PutUint64(e.scratch[:], x)
	e.write(e.scratch[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := io.WriteString(e.w, s)
		e.n += int64(n)
		e.err = err
	}
}

var zeros [256]byte

func (e *encoder) pad(align uint64) {
	n := alignUp(uint64(e.n), align) - uint64(e.n)
	for n > 0 {
		k := min(n, uint64(len(zeros)))
		e.write(zeros[:k])
		n -= k
	}
}

// payload writes a value without its type tag; an array's payload is its
// element type, length and elements.
func (e *encoder) payload(v Value) {
	switch v.typ {
	case TypeUint8, TypeInt8, TypeBool:
		e.u8(uint8(v.num))
	case TypeUint16, TypeInt16:
		e.u16(uint16(v.num))
	case TypeUint32, TypeInt32, TypeFloat32:
		e.u32(uint32(v.num))
	case TypeUint64, TypeInt64, TypeFloat64:
		e.u64(v.num)
	case TypeString:
		e.str(v.str)
	case TypeArray:
		e.u32(uint32(v.elem))
		e.u64(uint64(v.Len()))
		switch s := v.arr.(type) {
		case []string:
			each(s, e.str)
		case []Value:
			each(s, e.payload)
		default: // numbers and bools, little-endian as the reader decodes them
			b, err := binary.Append(nil, binary.LittleEndian, s)
			if err != nil && e.err == nil {
				e.err = err
			}
			e.write(b)
		}
	}
}

func each[T any](s []T, f func(T)) {
	for _, x := range s {
		f(x)
	}
}

// A tensorWriter passes one tensor's data to the encoder and refuses more
// than the tensor's size.
type tensorWriter struct {
	e    *encoder
	left uint64
}

func (t *tensorWriter) Write(b []byte) (int, error) {
	if uint64(len(b)) > t.left {
		return 0, fmt.Errorf("more data than the tensor's size (%d bytes left, %d offered)", t.left, len(b))
	}
	if t.e.err != nil {
		return 0, t.e.err
	}
	before := t.e.n
	t.e.write(b)
	n := int(t.e.n - before)
	t.left -= uint64(n)
	return n, t.e.err
}
