package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/damascus-llm/damascus/quant"
)

// Format limits. MaxDims and MaxNameLen are ggml's (GGML_MAX_DIMS,
// GGML_MAX_NAME less its NUL); MaxKeyLen is the GGUF specification's.
const (
	MaxDims          = 4
	MaxNameLen       = 63
	MaxKeyLen        = 65535
	MaxArrayNesting  = 64 // arrays of arrays deeper than this are refused
	DefaultAlignment = 32
	AlignmentKey     = "general.alignment"
)

const magic = "GGUF"

// A FormatError reports a malformed file: what is wrong and the byte offset
// of the field where it was found.
type FormatError struct {
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: %s (at byte offset %d)", e.Msg, e.Offset)
}

// Fewest bytes one metadata entry and one tensor info take: a key (u64
// length, at least one byte), a value type and a one-byte value; a name
// length, a dims count, a type and an offset.
const (
	minKVSize         = 8 + 1 + 4 + 1
	minTensorInfoSize = 8 + 4 + 4 + 8
)

// Parse reads a GGUF file held in data. The File's tensor data are views
// into data, never copies; metadata strings are copied.
//
// Everything is validated before it is allocated: every count is bounded by
// the bytes left in data, so a malformed or hostile input cannot make Parse
// allocate much more than a small multiple of len(data). A malformed file
// gives a *FormatError.
func Parse(data []byte) (*File, error) {
	p := parser{data: data}
	return p.file()
}

type parser struct {
	data []byte
	off  int
}

func (p *parser) errorf(at int, format string, args ...any) error {
	return &FormatError{Offset: int64(at), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) left() int { return len(p.data) - p.off }

// The readers below take what they read as what and name (a key or tensor
// name, quoted after what when not empty), so that messages are built only
// on failure.

func describe(what, name string) string {
	if name == "" {
		return what
	}
	return what + " " + strconv.Quote(name)
}

func (p *parser) take(n int, what, name string) ([]byte, error) {
	if n > p.left() {
		return nil, p.errorf(p.off, "file ends inside %s (needs %d bytes, %d left)", describe(what, name), n, p.left())
	}
	b := p.data[p.off : p.off+n]
	p.off += n
	return b, nil
}

func (p *parser) u32(what, name string) (uint32, error) {
	b, err := p.take(4, what, name)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *parser) u64(what, name string) (uint64, error) {
	b, err := p.take(8, what, name)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a length-prefixed string of at most limit bytes (0: no limit
// beyond the file's end).
func (p *parser) str(what, name string, limit int) (string, error) {
	at := p.off
	n, err := p.u64("the length of "+what, name)
	if err != nil {
		return "", err
	}
	if limit > 0 && n > uint64(limit) {
		return "", p.errorf(at, "%s is %d bytes long, more than the limit of %d", describe(what, name), n, limit)
	}
	if n > uint64(p.left()) {
		return "", p.errorf(at, "%s length %d runs past the end of the file (%d bytes left)", describe(what, name), n, p.left())
	}
	s := string(p.data[p.off : p.off+int(n)])
	p.off += int(n)
	return s, nil
}

// uniqueName reads entry i of n's name (a metadata key or a tensor name;
// what says which in errors), refusing an empty one (emptyf, given i+1 and
// n) and one already in seen (dupf, given the name), at the name's start.
func (p *parser) uniqueName(what string, limit int, seen map[string]int, emptyf string, i, n int, dupf string) (string, error) {
	at := p.off
	s, err := p.str(what, "", limit)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", p.errorf(at, emptyf, i+1, n)
	}
	if _, dup := seen[s]; dup {
		return "", p.errorf(at, dupf, s)
	}
	return s, nil
}

func (p *parser) file() (*File, error) {
	b, err := p.take(4, "the magic number", "")
	if err != nil {
		return nil, err
	}
	if string(b) != magic {
		return nil, p.errorf(0, "not a GGUF file: magic %q, want %q", b, magic)
	}
	version, err := p.u32("the version", "")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 1:
		return nil, p.errorf(4, "GGUF version 1 is not supported")
	case version&0xffff == 0:
		return nil, p.errorf(4, "GGUF version %#x is not supported (a big-endian file?)", version)
	case version != 2 && version != 3:
		return nil, p.errorf(4, "GGUF version %d is not supported (want 2 or 3)", version)
	}
	nTensors, err := p.u64("the tensor count", "")
	if err != nil {
		return nil, err
	}
	nKV, err := p.u64("the metadata count", "")
	if err != nil {
		return nil, err
	}
	left := uint64(p.left())
	if nTensors > left/minTensorInfoSize {
		return nil, p.errorf(8, "tensor count %d cannot fit in the %d bytes left", nTensors, left)
	}
	if nKV > left/minKVSize || nKV*minKVSize > left-nTensors*minTensorInfoSize {
		return nil, p.errorf(16, "metadata count %d (with %d tensors) cannot fit in the %d bytes left", nKV, nTensors, left)
	}

	f := &File{
		Version:     version,
		Alignment:   DefaultAlignment,
		data:        p.data,
		size:        int64(len(p.data)),
		kvIndex:     make(map[string]int, nKV),
		tensorIndex: make(map[string]int, nTensors),
	}
	if err := p.metadata(f, int(nKV)); err != nil {
		return nil, err
	}
	if err := p.tensorInfos(f, int(nTensors)); err != nil {
		return nil, err
	}
	return f, nil
}

func (p *parser) metadata(f *File, n int) error {
	f.KV = make([]KV, n)
	alignmentAt := -1
	for i := range f.KV {
		key, err := p.uniqueName("a metadata key", MaxKeyLen, f.kvIndex, "metadata key %d of %d is empty", i, n, "duplicate metadata key %q")
		if err != nil {
			return err
		}
		typeAt := p.off
		t, err := p.u32("the type of key", key)
		if err != nil {
			return err
		}
		if key == AlignmentKey {
			alignmentAt = typeAt
		}
		v, err := p.value(ValueType(t), key, 0)
		if err != nil {
			return err
		}
		f.KV[i] = KV{Key: key, Value: v}
		f.kvIndex[key] = i
	}
	if alignmentAt >= 0 {
		v := f.KV[f.kvIndex[AlignmentKey]].Value
		if v.typ != TypeUint32 {
			return p.errorf(alignmentAt, "%s is %s, want u32", AlignmentKey, v.typeName())
		}
		if v.num == 0 || v.num&(v.num-1) != 0 {
			return p.errorf(alignmentAt, "%s is %d, not a power of two", AlignmentKey, v.num)
		}
		f.Alignment = v.num
	}
	return nil
}

// value reads one value of type t; key names it in errors.
func (p *parser) value(t ValueType, key string, depth int) (Value, error) {
	at := p.off
	if t == TypeArray {
		return p.array(key, depth)
	}
	if t == TypeString {
		s, err := p.str("the value of key", key, 0)
		return Str(s), err
	}
	if !t.known() {
		return Value{}, p.errorf(at-4, "key %q has unknown value type %d", key, uint32(t))
	}
	b, err := p.take(t.minEncodedSize(), "the value of key", key)
	if err != nil {
		return Value{}, err
	}
	v := Value{typ: t}
	switch t {
	case TypeUint8:
		v.num = uint64(b[0])
	case TypeInt8:
		v.num = uint64(int64(int8(b[0])))
	case TypeBool:
		if b[0] > 1 {
			return Value{}, p.errorf(at, "key %q: bool byte is %d, want 0 or 1", key, b[0])
		}
		v.num = uint64(b[0])
	case TypeUint16:
		v.num = uint64(binary.LittleEndian.Uint16(b))
	case TypeInt16:
		v.num = uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case TypeUint32, TypeFloat32:
		v.num = uint64(binary.LittleEndian.Uint32(b))
	case TypeInt32:
		v.num = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	default: // 64-bit types
		v.num = binary.LittleEndian.Uint64(b)
	}
	return v, nil
}

func (p *parser) array(key string, depth int) (Value, error) {
	at := p.off
	if depth >= MaxArrayNesting {
		return Value{}, p.errorf(at, "key %q: arrays nested more than %d deep", key, MaxArrayNesting)
	}
	et, err := p.u32("the array element type of key", key)
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.known() {
		return Value{}, p.errorf(at, "key %q: array has unknown element type %d", key, et)
	}
	countAt := p.off
	n64, err := p.u64("the array length of key", key)
	if err != nil {
		return Value{}, err
	}
	if n64 > uint64(p.left()/elem.minEncodedSize()) {
		return Value{}, p.errorf(countAt, "key %q: array of %d %s cannot fit in the %d bytes left", key, n64, elem, p.left())
	}
	n := int(n64)
	size := n * elem.minEncodedSize() // exact for fixed-size elements
	switch elem {
	case TypeString:
		s, err := p.strings(key, n)
		return arrayOf(elem, s), err
	case TypeArray:
		vs := make([]Value, n)
		for i := range vs {
			if vs[i], err = p.array(key, depth+1); err != nil {
				return Value{}, err
			}
		}
		return arrayOf(elem, vs), nil
	case TypeBool:
		bs := make([]bool, n)
		for i, c := range p.data[p.off : p.off+n] {
			if c > 1 {
				return Value{}, p.errorf(p.off+i, "key %q: bool byte is %d, want 0 or 1", key, c)
			}
			bs[i] = c == 1
		}
		p.off += n
		return arrayOf(elem, bs), nil
	}
	b := p.data[p.off : p.off+size]
	p.off += size
	s := fixedArray(elem, n)
	if _, err := binary.Decode(b, binary.LittleEndian, s); err != nil {
		return Value{}, p.errorf(countAt, "key %q: %v", key, err) // b holds exactly n elements
	}
	return arrayOf(elem, s), nil
}

// strings reads n length-prefixed strings. They are validated in one pass,
// then copied with a single allocation that all the strings share, which
// keeps a 128k-token vocabulary cheap to load.
func (p *parser) strings(key string, n int) ([]string, error) {
	start, off := p.off, p.off
	for i := range n {
		if len(p.data)-off < 8 {
			return nil, p.errorf(off, "key %q: file ends inside the length of string %d", key, i)
		}
		l := binary.LittleEndian.Uint64(p.data[off:])
		if l > uint64(len(p.data)-off-8) {
			return nil, p.errorf(off, "key %q: string %d length %d runs past the end of the file", key, i, l)
		}
		off += 8 + int(l)
	}
	blob := string(p.data[start:off])
	out := make([]string, n)
	o := 0
	for i := range out {
		l := int(binary.LittleEndian.Uint64(p.data[start+o:]))
		out[i] = blob[o+8 : o+8+l]
		o += 8 + l
	}
	p.off = off
	return out, nil
}

func (p *parser) tensorInfos(f *File, n int) error {
	f.Tensors = make([]TensorInfo, n)
	offsetAt := make([]int, n) // where each tensor's offset field lies, for errors
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name, err := p.uniqueName("a tensor name", MaxNameLen, f.tensorIndex, "tensor %d of %d has an empty name", i, n, "duplicate tensor name %q")
		if err != nil {
			return err
		}
		t.Name = name
		f.tensorIndex[name] = i
		at := p.off
		nd, err := p.u32("the dims count of tensor", name)
		if err != nil {
			return err
		}
		if nd > MaxDims {
			return p.errorf(at, "tensor %q has %d dimensions, more than %d", name, nd, MaxDims)
		}
		t.Dims = make([]uint64, nd)
		for j := range t.Dims {
			if t.Dims[j], err = p.u64("the dims of tensor", name); err != nil {
				return err
			}
		}
		at = p.off
		typ, err := p.u32("the type of tensor", name)
		if err != nil {
			return err
		}
		t.Type = quant.Type(typ)
		if t.Size, err = tensorSize(t.Type, t.Dims); err != nil {
			return p.errorf(at, "tensor %q: %v", name, err)
		}
		offsetAt[i] = p.off
		if t.Offset, err = p.u64("the offset of tensor", name); err != nil {
			return err
		}
		if t.Offset%f.Alignment != 0 {
			return p.errorf(offsetAt[i], "tensor %q offset %d is not a multiple of the alignment %d", name, t.Offset, f.Alignment)
		}
	}

	// The data section starts at the next aligned offset (ggml pads only when
	// there are tensors).
	end := uint64(p.off)
	f.DataOffset = end
	if n > 0 {
		f.DataOffset = (end + f.Alignment - 1) &^ (f.Alignment - 1)
		if f.DataOffset > uint64(len(p.data)) {
			return p.errorf(p.off, "file ends before the data section starts at %d", f.DataOffset)
		}
	}
	room := uint64(len(p.data)) - f.DataOffset
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset > room || t.Size > room-t.Offset {
			return p.errorf(offsetAt[i], "tensor %q data (%d bytes at data offset %d) runs past the end of the file (data section holds %d bytes)",
				t.Name, t.Size, t.Offset, room)
		}
	}
	// No two tensors may share bytes.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ta, tb := &f.Tensors[a], &f.Tensors[b]
		if ta.Offset != tb.Offset {
			return cmpUint64(ta.Offset, tb.Offset)
		}
		return cmpUint64(ta.Size, tb.Size)
	})
	for k := 1; k < n; k++ {
		prev, cur := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if cur.Offset < prev.Offset+prev.Size {
			return p.errorf(offsetAt[order[k]], "tensor %q data overlaps tensor %q", cur.Name, prev.Name)
		}
	}
	return nil
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tensorSize returns the bytes a tensor of type typ and shape dims takes,
// checking that the shape is valid for the type and the size representable.
func tensorSize(typ quant.Type, dims []uint64) (uint64, error) {
	if !typ.Known() {
		return 0, fmt.Errorf("unknown tensor type id %d", uint32(typ))
	}
	if len(dims) > MaxDims {
		return 0, fmt.Errorf("%d dimensions, more than %d", len(dims), MaxDims)
	}
	elems := uint64(1)
	for j, d := range dims {
		if d > math.MaxInt64 {
			return 0, fmt.Errorf("dimension %d is %d, out of range", j, d)
		}
		hi, lo := bits.Mul64(elems, d)
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("shape %v has too many elements", dims)
		}
		elems = lo
	}
	row := uint64(1)
	if len(dims) > 0 {
		row = dims[0]
	}
	bs := uint64(typ.BlockSize())
	if row%bs != 0 {
		return 0, fmt.Errorf("row of %d values is not a multiple of the %s block size %d", row, typ, bs)
	}
	hi, size := bits.Mul64(elems/bs, uint64(typ.TypeSize()))
	if hi != 0 || size > math.MaxInt64 {
		return 0, fmt.Errorf("shape %v of %s is too large in bytes", dims, typ)
	}
	return size, nil
}
