package gguf_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/quant"
)

// raw assembles GGUF bytes by hand, to build files the writer never would.
type raw struct{ b []byte }

func header(nTensors, nKV uint64) *raw {
	r := &raw{b: []byte("GGUF")}
	return r.u32(3).u64(nTensors).u64(nKV)
}

func (r *raw) u8(x uint8) *raw   { r.b = append(r.b, x); return r }
func (r *raw) u32(x uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, x); return r }
func (r *raw) u64(x uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, x); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }
func (r *raw) pos() int          { return len(r.b) }
func (r *raw) zeros(n int) *raw  { r.b = append(r.b, make([]byte, n)...); return r }
func (r *raw) pad(n int) *raw {
	for len(r.b)%n != 0 {
		r.b = append(r.b, 0)
	}
	return r
}

// tensor appends a tensor info.
func (r *raw) tensor(name string, typ quant.Type, offset uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(uint32(typ)).u64(offset)
}

// A badFile is a malformed input and the error it must give.
type badFile struct {
	name   string
	data   []byte
	offset int
	msg    string
}

// badFiles returns one malformed input per check the reader makes.
func badFiles() []badFile {
	var cases []badFile
	add := func(name string, r *raw, offset int, msg string) {
		cases = append(cases, badFile{name, r.b, offset, msg})
	}

	add("empty", &raw{}, 0, "file ends inside the magic number")
	add("magic", &raw{b: []byte("GGML\x03\x00\x00\x00")}, 0, `not a GGUF file: magic "GGML"`)
	r := &raw{b: []byte("GGUF")}
	add("version 1", r.u32(1).u32(0).u32(0), 4, "GGUF version 1 is not supported")
	add("version 4", (&raw{b: []byte("GGUF")}).u32(4).u64(0).u64(0), 4, "GGUF version 4 is not supported")
	add("big endian", (&raw{b: []byte("GGUF")}).u32(3<<24).u64(0).u64(0), 4, "big-endian")
	add("truncated header", &raw{b: []byte("GGUF\x03\x00\x00\x00\x00")}, 8, "file ends inside the tensor count")
	add("tensor count", header(1<<40, 0), 8, "tensor count 1099511627776 cannot fit")
	add("kv count", header(0, 1<<62), 16, "metadata count 4611686018427387904")
	add("kv and tensor counts together", header(1, 1).u64(0).u64(0).u64(0).u32(0).u8(0).u8(0), 16, "metadata count 1 (with 1 tensors)")

	r = header(0, 1)
	at := r.pos()
	add("key length", r.u64(60000).u64(0), at, "a metadata key length 60000 runs past the end of the file (8 bytes left)")
	r = header(0, 1)
	at = r.pos()
	add("key too long", r.u64(70000).u64(0), at, "more than the limit of 65535")
	r = header(0, 1)
	at = r.pos()
	add("empty key", r.str("").u32(0).u8(0).u8(0), at, "metadata key 1 of 1 is empty")
	r = header(0, 2).str("k").u32(uint32(gguf.TypeUint8)).u8(1)
	at = r.pos()
	add("duplicate key", r.str("k").u32(uint32(gguf.TypeUint8)).u8(1), at, `duplicate metadata key "k"`)
	r = header(0, 1).str("k")
	at = r.pos()
	add("value type", r.u32(13).u64(0), at, `key "k" has unknown value type 13`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeBool))
	at = r.pos()
	add("bool", r.u8(2), at, `key "k": bool byte is 2`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeBool)).u64(3).u8(1).u8(0)
	at = r.pos()
	add("bool array", r.u8(7), at, `key "k": bool byte is 7`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeUint64))
	at = r.pos()
	add("truncated value", r.u32(0), at, `file ends inside the value of key "k" (needs 8 bytes, 4 left)`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeString))
	at = r.pos()
	add("string length", r.u64(100).str("abc"), at, `the value of key "k" length 100 runs past the end of the file (11 bytes left)`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeArray))
	at = r.pos()
	add("array element type", r.u32(99).u64(0), at, `key "k": array has unknown element type 99`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeUint32))
	at = r.pos()
	add("array length", r.u64(5).u32(1).u32(2).u32(3).u32(4), at, `array of 5 u32 cannot fit in the 16 bytes left`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeString)).u64(2).str("ab")
	at = r.pos()
	add("string array", r.u64(9).u64(0), at, `key "k": string 1 length 9 runs past the end`)
	r = header(0, 1).str("k").u32(uint32(gguf.TypeArray))
	for range gguf.MaxArrayNesting {
		r.u32(uint32(gguf.TypeArray)).u64(1)
	}
	at = r.pos()
	add("nesting", r.u32(uint32(gguf.TypeUint8)).u64(0), at, "arrays nested more than 64 deep")

	r = header(0, 1).str(gguf.AlignmentKey)
	at = r.pos()
	add("alignment type", r.u32(uint32(gguf.TypeUint64)).u64(32), at, "general.alignment is u64, want u32")
	r = header(0, 1).str(gguf.AlignmentKey)
	at = r.pos()
	add("alignment power", r.u32(uint32(gguf.TypeUint32)).u32(24), at, "general.alignment is 24, not a power of two")
	r = header(0, 1).str(gguf.AlignmentKey)
	at = r.pos()
	add("alignment zero", r.u32(uint32(gguf.TypeUint32)).u32(0), at, "general.alignment is 0, not a power of two")

	r = header(1, 0)
	at = r.pos()
	add("tensor name", r.str(strings.Repeat("x", 64)).u32(1).u64(1).u32(0).u64(0).pad(32).u32(0), at, "a tensor name is 64 bytes long, more than the limit of 63")
	r = header(1, 0)
	at = r.pos()
	add("empty tensor name", r.tensor("", quant.F32, 0, 1).pad(32).u32(0), at, "tensor 1 of 1 has an empty name")
	r = header(2, 0).tensor("a", quant.F32, 0, 1)
	at = r.pos()
	add("duplicate tensor", r.tensor("a", quant.F32, 32, 1).pad(32).u64(0).u64(0).u64(0).u64(0).u64(0), at, `duplicate tensor name "a"`)
	r = header(1, 0).str("a")
	at = r.pos()
	add("dims", r.u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0), at, `tensor "a" has 5 dimensions, more than 4`)
	r = header(1, 0).str("a").u32(1).u64(32)
	at = r.pos()
	add("unknown type", r.u32(4).u64(0).pad(32).u64(0), at, `tensor "a": unknown tensor type id 4`)
	r = header(1, 0).str("a").u32(1).u64(32)
	at = r.pos()
	add("type id far out", r.u32(1000).u64(0), at, `unknown tensor type id 1000`)
	r = header(1, 0).str("a").u32(2).u64(100).u64(2)
	at = r.pos()
	add("partial block", r.u32(uint32(quant.Q4_K)).u64(0), at, "row of 100 values is not a multiple of the Q4_K block size 256")
	r = header(1, 0).str("a").u32(2).u64(1 << 40).u64(1 << 30)
	at = r.pos()
	add("element overflow", r.u32(0).u64(0), at, "too many elements")
	r = header(1, 0).str("a").u32(1).u64(math.MaxUint64)
	at = r.pos()
	add("negative dim", r.u32(0).u64(0), at, "dimension 0 is 18446744073709551615, out of range")
	r = header(1, 0).str("a").u32(1).u64(1 << 61)
	at = r.pos()
	add("byte overflow", r.u32(0).u64(0), at, "too large in bytes")
	r = header(1, 0).str("a").u32(1).u64(1).u32(0)
	at = r.pos()
	add("misaligned", r.u64(4).pad(32).u64(0), at, `tensor "a" offset 4 is not a multiple of the alignment 32`)
	r = header(1, 0).str("a").u32(1).u64(8).u32(0)
	at = r.pos()
	add("past end", r.u64(0).pad(32).u64(0), at, `tensor "a" data (32 bytes at data offset 0) runs past the end of the file (data section holds 8 bytes)`)
	r = header(1, 0).str("a").u32(1).u64(1).u32(0)
	at = r.pos()
	add("huge offset", r.u64(1<<63).pad(32).u64(0), at, "runs past the end of the file")
	r = header(1, 0).tensor("a", quant.F32, 0, 0)
	at = r.pos()
	add("no data section", r, at, "file ends before the data section starts at 64")
	r = header(2, 0).tensor("a", quant.F32, 0, 16)
	at = r.pos() + 8 + 1 + 4 + 8 + 4 // b's offset field
	add("overlap", r.tensor("b", quant.F32, 32, 16).pad(32).zeros(128), at, `tensor "b" data overlaps tensor "a"`)

	return cases
}

func TestParseErrors(t *testing.T) {
	for _, c := range badFiles() {
		t.Run(c.name, func(t *testing.T) {
			f, err := gguf.Parse(c.data)
			if err == nil {
				t.Fatalf("parsed: %d keys, %d tensors", len(f.KV), len(f.Tensors))
			}
			var fe *gguf.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FormatError", err, err)
			}
			if !strings.Contains(fe.Msg, c.msg) || fe.Offset != int64(c.offset) {
				t.Fatalf("got %v\nwant %q at byte offset %d", err, c.msg, c.offset)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

// edgeCaseFile is a valid version 2 file with alignment 8, a scalar (no
// dims), a zero-sized tensor and a tensor sharing its offset.
func edgeCaseFile() []byte {
	r := &raw{b: []byte("GGUF")}
	r.u32(2).u64(3).u64(1).str("general.alignment").u32(uint32(gguf.TypeUint32)).u32(8)
	r.tensor("scalar", quant.F32, 0).tensor("empty", quant.Q8_0, 8, 0, 5).tensor("v", quant.I8, 8, 3)
	r.pad(8).u32(math.Float32bits(2.5)).u32(0).u8(1).u8(2).u8(3)
	return r.b
}

func TestParseEdgeCases(t *testing.T) {
	// Version 2 is read like 3. A zero-dims tensor is a scalar, a zero-sized
	// one takes no bytes; neither overlaps its neighbours.
	data := edgeCaseFile()
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || f.Alignment != 8 || f.DataOffset%8 != 0 {
		t.Fatalf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	s, _ := f.Tensor("scalar")
	e, _ := f.Tensor("empty")
	v, _ := f.Tensor("v")
	if s.Size != 4 || s.Elements() != 1 || e.Size != 0 || e.Elements() != 0 || string(f.TensorData(v)) != "\x01\x02\x03" {
		t.Fatalf("scalar %d bytes, empty %d bytes, v %q", s.Size, e.Size, f.TensorData(v))
	}
	if got := f.Size(); got != int64(len(data)) {
		t.Errorf("Size %d, want %d", got, len(data))
	}
}

func TestGetters(t *testing.T) {
	w := gguf.NewWriter()
	for _, kv := range everyValue() {
		w.Set(kv.Key, kv.Value)
	}
	w.Set("i32.neg", gguf.I32(-5))
	w.Set("i32.pos", gguf.I32(5))
	w.Set("u64.small", gguf.U64(7))
	var buf strings.Builder
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse([]byte(buf.String()))
	if err != nil {
		t.Fatal(err)
	}

	// Integers of any type are accepted where they fit.
	for key, want := range map[string]uint64{"u8.max": 255, "i32.pos": 5, "u64.small": 7, "u32.max": math.MaxUint32} {
		if got, err := f.Uint32(key); err != nil || uint64(got) != want {
			t.Errorf("Uint32(%s) = %d, %v; want %d", key, got, err, want)
		}
	}
	if got, err := f.Uint64("u64.max"); err != nil || got != math.MaxUint64 {
		t.Errorf("Uint64(u64.max) = %d, %v", got, err)
	}
	if got, err := f.Int64("i64.min"); err != nil || got != math.MinInt64 {
		t.Errorf("Int64(i64.min) = %d, %v", got, err)
	}
	if got, err := f.Int64("u16.max"); err != nil || got != math.MaxUint16 {
		t.Errorf("Int64(u16.max) = %d, %v", got, err)
	}
	if got, err := f.Float32("f64.e"); err != nil || got != float32(math.E) {
		t.Errorf("Float32(f64.e) = %g, %v", got, err)
	}
	if got, err := f.Float64("f32.pi"); err != nil || got != float64(float32(math.Pi)) {
		t.Errorf("Float64(f32.pi) = %g, %v", got, err)
	}
	if got, err := f.Bool("bool.true"); err != nil || !got {
		t.Errorf("Bool = %v, %v", got, err)
	}
	if got, err := f.Strings("arr.str"); err != nil || len(got) != 4 || got[2] != "▁a" {
		t.Errorf("Strings = %q, %v", got, err)
	}
	if got, err := f.Float32s("arr.f32"); err != nil || len(got) != 3 || got[0] != 1.5 {
		t.Errorf("Float32s = %v, %v", got, err)
	}
	if got, err := f.Int32s("arr.i32"); err != nil || len(got) != 2 || got[1] != math.MinInt32 {
		t.Errorf("Int32s = %v, %v", got, err)
	}
	if n, err := f.ArrayLen("arr.arr"); err != nil || n != 4 {
		t.Errorf("ArrayLen(arr.arr) = %d, %v", n, err)
	}
	if !f.Has("str.empty") || f.Has("nope") {
		t.Error("Has is wrong")
	}

	// Errors name the key, its type and what was wanted.
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(f.Uint32("nope")), `gguf: key "nope": not found`},
		{second(f.Uint32("i32.neg")), `gguf: key "i32.neg" is i32 -5, want an unsigned integer`},
		{second(f.Uint32("u64.max")), `gguf: key "u64.max" is u64 18446744073709551615, want a u32`},
		{second(f.Int64("u64.max")), `gguf: key "u64.max" is u64 18446744073709551615, want an i64`},
		{second(f.Uint64("str.ascii")), `gguf: key "str.ascii" is str, want an unsigned integer`},
		{second(f.String("u8.max")), `gguf: key "u8.max" is u8, want str`},
		{second(f.Float32("u8.max")), `gguf: key "u8.max" is u8, want f32 or f64`},
		{second(f.Bool("arr.bool")), `gguf: key "arr.bool" is []bool, want bool`},
		{second(f.Strings("arr.u8")), `gguf: key "arr.u8" is []u8, want []str`},
		{second(f.Float32s("arr.f64")), `gguf: key "arr.f64" is []f64, want []f32`},
		{second(f.Int32s("arr.arr")), `gguf: key "arr.arr" is [][]u32, want []i32`},
		{second(f.ArrayLen("u8.max")), `gguf: key "u8.max" is u8, want an array`},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got error %v\nwant        %s", c.err, c.want)
		}
	}
	if _, err := f.String("nope"); !errors.Is(err, gguf.ErrKeyNotFound) {
		t.Errorf("missing key error %v does not wrap ErrKeyNotFound", err)
	}
}

func second[T any](_ T, err error) error { return err }

func TestValueString(t *testing.T) {
	for _, c := range []struct {
		v    gguf.Value
		want string
	}{
		{gguf.I8(-3), "-3"},
		{gguf.U64(math.MaxUint64), "18446744073709551615"},
		{gguf.F32(0.1), "0.1"},
		{gguf.F64(1e-5), "1e-05"},
		{gguf.Bool(true), "true"},
		{gguf.Str("a\"b"), `"a\"b"`},
		{gguf.U8s([]uint8{1, 2}), "[1, 2]"},
		{gguf.I32s([]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}), "[1, 2, 3, 4, 5, 6, 7, 8, … (9 items)]"},
		{gguf.Array(gguf.TypeArray, gguf.Strs([]string{"x"})), `[["x"]]`},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("String() = %s, want %s", got, c.want)
		}
	}
}

// smallFile is a valid file with every metadata type and a few tensors, small
// enough to truncate at every offset.
func smallFile(t testing.TB) []byte {
	tensors := everyTensor(rand.New(rand.NewPCG(5, 6)))[:6]
	return buildFile(t, everyValue(), tensors, 16)
}

// lastTensorEnd returns where the last tensor's data end in a file.
func lastTensorEnd(f *gguf.File) uint64 {
	end := f.DataOffset
	for _, t := range f.Tensors {
		end = max(end, f.DataOffset+t.Offset+t.Size)
	}
	return end
}

func TestTruncations(t *testing.T) {
	data := smallFile(t)
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	end := lastTensorEnd(f)
	for n := range len(data) {
		_, err := gguf.Parse(data[:n:n])
		if uint64(n) < end && err == nil {
			t.Fatalf("truncated to %d of %d bytes: parsed", n, len(data))
		}
		if uint64(n) >= end && err != nil { // only padding was cut
			t.Fatalf("truncated to %d bytes, after the last tensor: %v", n, err)
		}
		var fe *gguf.FormatError
		if err != nil && (!errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > int64(n)) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

func TestBitFlips(t *testing.T) {
	data := smallFile(t)
	flipped := make([]byte, len(data))
	errs := 0
	for i := range len(data) * 8 {
		copy(flipped, data)
		flipped[i/8] ^= 1 << (i % 8)
		if err := checkParse(flipped); err != nil {
			if errors.Is(err, errInvariant) {
				t.Fatalf("bit %d flipped: %v", i, err)
			}
			errs++
		}
	}
	t.Logf("%d of %d bit flips rejected", errs, len(data)*8)
	if errs == 0 {
		t.Fatal("no bit flip was rejected")
	}
}
