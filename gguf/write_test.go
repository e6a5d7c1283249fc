package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/quant"
)

// everyValue returns metadata covering every value type, its extremes, empty
// strings and arrays, and arrays of arrays.
func everyValue() []gguf.KV {
	nan32 := math.Float32frombits(0x7fc00001)
	nan64 := math.Float64frombits(0x7ff8000000000001)
	return []gguf.KV{
		{"u8.min", gguf.U8(0)}, {"u8.max", gguf.U8(math.MaxUint8)},
		{"i8.min", gguf.I8(math.MinInt8)}, {"i8.max", gguf.I8(math.MaxInt8)},
		{"u16.max", gguf.U16(math.MaxUint16)}, {"i16.min", gguf.I16(math.MinInt16)},
		{"u32.max", gguf.U32(math.MaxUint32)}, {"i32.min", gguf.I32(math.MinInt32)},
		{"u64.max", gguf.U64(math.MaxUint64)}, {"i64.min", gguf.I64(math.MinInt64)},
		{"i64.max", gguf.I64(math.MaxInt64)},
		{"f32.pi", gguf.F32(math.Pi)}, {"f32.negzero", gguf.F32(float32(math.Copysign(0, -1)))},
		{"f32.nan", gguf.F32(nan32)}, {"f32.inf", gguf.F32(float32(math.Inf(-1)))},
		{"f32.denormal", gguf.F32(math.SmallestNonzeroFloat32)},
		{"f64.e", gguf.F64(math.E)}, {"f64.nan", gguf.F64(nan64)}, {"f64.max", gguf.F64(math.MaxFloat64)},
		{"bool.true", gguf.Bool(true)}, {"bool.false", gguf.Bool(false)},
		{"str.empty", gguf.Str("")}, {"str.ascii", gguf.Str("llama")},
		{"str.utf8", gguf.Str("Grüße ▁the 日本 🦙")}, {"str.nul", gguf.Str("a\x00b\xff")},
		{"arr.u8", gguf.U8s([]uint8{0, 1, 255})}, {"arr.i8", gguf.I8s([]int8{-128, 0, 127})},
		{"arr.u16", gguf.U16s([]uint16{0, 65535})}, {"arr.i16", gguf.I16s([]int16{-32768, 32767})},
		{"arr.u32", gguf.U32s([]uint32{1, math.MaxUint32})}, {"arr.i32", gguf.I32s([]int32{-1, math.MinInt32})},
		{"arr.u64", gguf.U64s([]uint64{math.MaxUint64})}, {"arr.i64", gguf.I64s([]int64{math.MinInt64, 7})},
		{"arr.f32", gguf.F32s([]float32{1.5, nan32, float32(math.Copysign(0, -1))})}, {"arr.f64", gguf.F64s([]float64{nan64, 1e300})},
		{"arr.bool", gguf.Bools([]bool{true, false, true})},
		{"arr.str", gguf.Strs([]string{"", "<s>", "▁a", "\x00"})},
		{"arr.empty.u8", gguf.U8s(nil)}, {"arr.empty.str", gguf.Strs([]string{})},
		{"arr.empty.f64", gguf.F64s(nil)}, {"arr.empty.arr", gguf.Array(gguf.TypeArray)},
		{"arr.arr", gguf.Array(gguf.TypeArray,
			gguf.U32s([]uint32{1, 2}), gguf.Strs([]string{"x"}), gguf.U8s(nil),
			gguf.Array(gguf.TypeArray, gguf.F32s([]float32{3}), gguf.Array(gguf.TypeArray)))},
		{"arr.built", gguf.Array(gguf.TypeInt16, gguf.I16(-3), gguf.I16(4))},
		{"arr.built.str", gguf.Array(gguf.TypeString, gguf.Str("a"), gguf.Str(""))},
	}
}

type testTensor struct {
	name string
	typ  quant.Type
	dims []uint64
	data []byte
}

// everyTensor returns one tensor of every known type, with shapes of one to
// four dimensions and random bytes.
func everyTensor(rng *rand.Rand) []testTensor {
	var ts []testTensor
	for i, typ := range quant.KnownTypes() {
		bs := uint64(typ.BlockSize())
		dims := [][]uint64{{bs}, {2 * bs, 3}, {bs, 2, 3}, {bs, 1, 2, 2}}[i%4]
		size, err := quant.RowSize(typ, int64(dims[0]))
		if err != nil {
			panic(err)
		}
		for _, d := range dims[1:] {
			size *= int64(d)
		}
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		ts = append(ts, testTensor{"t." + typ.String(), typ, dims, data})
	}
	return ts
}

func buildFile(t testing.TB, kvs []gguf.KV, tensors []testTensor, align uint32) []byte {
	t.Helper()
	w := gguf.NewWriter()
	if align != 0 {
		w.SetAlignment(align)
	}
	for _, kv := range kvs {
		w.Set(kv.Key, kv.Value)
	}
	for i, tt := range tensors {
		var err error
		if i%2 == 0 {
			err = w.AddTensor(tt.name, tt.typ, tt.dims, tt.data)
		} else {
			err = w.AddTensorFunc(tt.name, tt.typ, tt.dims, uint64(len(tt.data)), func(out io.Writer) error {
				// Stream in uneven pieces, as a converter would.
				for b := tt.data; len(b) > 0; {
					n := min(len(b), 7)
					if _, err := out.Write(b[:n]); err != nil {
						return err
					}
					b = b[n:]
				}
				return nil
			})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func checkRoundTrip(t *testing.T, f *gguf.File, kvs []gguf.KV, tensors []testTensor, align uint64) {
	t.Helper()
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	if f.Alignment != align {
		t.Errorf("alignment %d, want %d", f.Alignment, align)
	}
	wantKV := kvs
	if align != gguf.DefaultAlignment {
		wantKV = append([]gguf.KV{{gguf.AlignmentKey, gguf.U32(uint32(align))}}, kvs...)
	}
	if len(f.KV) != len(wantKV) {
		t.Fatalf("%d keys, want %d", len(f.KV), len(wantKV))
	}
	for i, kv := range wantKV {
		got := f.KV[i]
		if got.Key != kv.Key || !got.Value.Equal(kv.Value) {
			t.Errorf("key %d: got %s = %s (%s), want %s = %s (%s)", i, got.Key, got.Value, got.Value.Type(), kv.Key, kv.Value, kv.Value.Type())
		}
	}
	if len(f.Tensors) != len(tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(tensors))
	}
	if f.DataOffset%align != 0 {
		t.Errorf("data offset %d not aligned to %d", f.DataOffset, align)
	}
	for i, tt := range tensors {
		ti := &f.Tensors[i]
		if ti.Name != tt.name || ti.Type != tt.typ || !slices.Equal(ti.Dims, tt.dims) || ti.Size != uint64(len(tt.data)) {
			t.Errorf("tensor %d: got %s %s %v %d bytes, want %s %s %v %d bytes",
				i, ti.Name, ti.Type, ti.Dims, ti.Size, tt.name, tt.typ, tt.dims, len(tt.data))
			continue
		}
		if ti.Offset%align != 0 {
			t.Errorf("tensor %s offset %d not aligned to %d", ti.Name, ti.Offset, align)
		}
		if byName, ok := f.Tensor(tt.name); !ok || byName != ti {
			t.Errorf("Tensor(%q) did not find it", tt.name)
		}
		if !bytes.Equal(f.TensorData(ti), tt.data) {
			t.Errorf("tensor %s: data differ", tt.name)
		}
	}
}

func TestRoundTripEveryType(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kvs := everyValue()
	tensors := everyTensor(rng)
	if len(tensors) < 30 {
		t.Fatalf("only %d known tensor types", len(tensors))
	}
	for _, align := range []uint32{0, 1, 8, 64, 4096} {
		data := buildFile(t, kvs, tensors, align)
		f, err := gguf.Parse(data)
		if err != nil {
			t.Fatalf("alignment %d: %v", align, err)
		}
		want := uint64(align)
		if align == 0 {
			want = gguf.DefaultAlignment
		}
		checkRoundTrip(t, f, kvs, tensors, want)
		if len(data)%int(want) != 0 {
			t.Errorf("alignment %d: file of %d bytes is not padded to the alignment", align, len(data))
		}
	}
}

func TestWriteFileOpen(t *testing.T) {
	kvs := everyValue()
	tensors := everyTensor(rand.New(rand.NewPCG(3, 4)))
	path := filepath.Join(t.TempDir(), "m.gguf")
	w := gguf.NewWriter()
	for _, kv := range kvs {
		w.Set(kv.Key, kv.Value)
	}
	for _, tt := range tensors {
		if err := w.AddTensor(tt.name, tt.typ, tt.dims, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, f, kvs, tensors, gguf.DefaultAlignment)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Metadata outlives the map.
	if s, err := f.String("str.utf8"); err != nil || s != "Grüße ▁the 日本 🦙" {
		t.Errorf("after Close: %q, %v", s, err)
	}
}

// TestWriterBytes checks the writer against the format itself, not only
// against this package's reader: a file assembled by hand from the GGUF
// specification must come out byte for byte.
func TestWriterBytes(t *testing.T) {
	w := gguf.NewWriter()
	w.Set("a", gguf.U32(7))
	w.Set("b", gguf.Strs([]string{"x", ""}))
	w.Set("a", gguf.U32(9)) // replaces, keeps its place
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	if err := w.AddTensor("t", quant.F32, []uint64{2}, data); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := w.WriteTo(&got); err != nil {
		t.Fatal(err)
	}

	var want []byte
	le := binary.LittleEndian
	str := func(s string) { want = le.AppendUint64(want, uint64(len(s))); want = append(want, s...) }
	want = append(want, "GGUF"...)
	want = le.AppendUint32(want, 3)
	want = le.AppendUint64(want, 1) // tensors
	want = le.AppendUint64(want, 2) // metadata
	str("a")
	want = le.AppendUint32(want, 4) // u32
	want = le.AppendUint32(want, 9)
	str("b")
	want = le.AppendUint32(want, 9) // array
	want = le.AppendUint32(want, 8) // of str
	want = le.AppendUint64(want, 2)
	str("x")
	str("")
	str("t")
	want = le.AppendUint32(want, 1) // dims
	want = le.AppendUint64(want, 2)
	want = le.AppendUint32(want, 0) // F32
	want = le.AppendUint64(want, 0) // offset
	for len(want)%32 != 0 {
		want = append(want, 0)
	}
	want = append(want, data...)
	for len(want)%32 != 0 {
		want = append(want, 0)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("writer bytes differ from the hand-built file:\ngot  %x\nwant %x", got.Bytes(), want)
	}
}

func TestWriterRejects(t *testing.T) {
	// Some mistakes show only when the file is written.
	write := func(w *gguf.Writer) error {
		_, err := w.WriteTo(io.Discard)
		return err
	}
	// streamed adds a 16-byte F32 tensor whose data fill writes, then writes.
	streamed := func(fill func(io.Writer) error) func(*gguf.Writer) error {
		return func(w *gguf.Writer) error {
			w.AddTensorFunc("t", quant.F32, []uint64{4}, 16, fill)
			return write(w)
		}
	}
	for _, tc := range []struct {
		name string
		add  func(w *gguf.Writer) error
		want string
	}{
		{"short data", func(w *gguf.Writer) error {
			return w.AddTensor("t", quant.F32, []uint64{4}, make([]byte, 15))
		}, "15 bytes of data, want 16"},
		{"partial block", func(w *gguf.Writer) error {
			return w.AddTensor("t", quant.Q4_K, []uint64{100}, nil)
		}, "not a multiple of the Q4_K block size 256"},
		{"unknown type", func(w *gguf.Writer) error {
			return w.AddTensor("t", quant.Type(4), []uint64{32}, nil)
		}, "unknown tensor type id 4"},
		{"five dims", func(w *gguf.Writer) error {
			return w.AddTensor("t", quant.F32, []uint64{1, 1, 1, 1, 1}, make([]byte, 4))
		}, "5 dimensions"},
		{"long name", func(w *gguf.Writer) error {
			return w.AddTensor(strings.Repeat("n", 64), quant.F32, []uint64{1}, make([]byte, 4))
		}, "more than 63"},
		{"duplicate", func(w *gguf.Writer) error {
			w.AddTensor("t", quant.F32, []uint64{1}, make([]byte, 4))
			return w.AddTensor("t", quant.F32, []uint64{1}, make([]byte, 4))
		}, `duplicate tensor "t"`},
		{"overflow", func(w *gguf.Writer) error {
			return w.AddTensor("t", quant.F32, []uint64{1 << 62, 4}, nil)
		}, "too many elements"},
		{"alignment", func(w *gguf.Writer) error {
			w.SetAlignment(48)
			return write(w)
		}, "not a power of two"},
		{"alignment type", func(w *gguf.Writer) error {
			w.Set(gguf.AlignmentKey, gguf.U64(32))
			return write(w)
		}, "is u64, want u32"},
		{"empty key", func(w *gguf.Writer) error {
			w.Set("", gguf.U8(1))
			return write(w)
		}, "empty metadata key"},
		{"stream short", streamed(func(out io.Writer) error {
			_, err := out.Write(make([]byte, 12))
			return err
		}), "wrote 12 bytes, want 16"},
		{"stream long", streamed(func(out io.Writer) error {
			_, err := out.Write(make([]byte, 20))
			return err
		}), "more data than the tensor's size"},
		{"stream error", streamed(func(io.Writer) error {
			return errors.New("disk on fire")
		}), "disk on fire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.add(gguf.NewWriter())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestArrayPanicsOnMixedTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Array with a u8 among u32 did not panic")
		}
	}()
	gguf.Array(gguf.TypeUint32, gguf.U32(1), gguf.U8(2))
}

// TestArrayRebuild rebuilds every array from its elements with Array: Index
// and Array must invert each other for every element type.
func TestArrayRebuild(t *testing.T) {
	for _, kv := range everyValue() {
		v := kv.Value
		if v.Type() != gguf.TypeArray {
			continue
		}
		elems := make([]gguf.Value, v.Len())
		for i := range elems {
			elems[i] = v.Index(i)
			if elems[i].Type() != v.ElemType() {
				t.Errorf("%s[%d] is %s, array of %s", kv.Key, i, elems[i].Type(), v.ElemType())
			}
		}
		if got := gguf.Array(v.ElemType(), elems...); !got.Equal(v) {
			t.Errorf("%s: Array(Index...) = %s, want %s", kv.Key, got, v)
		}
	}
	if gguf.U8s([]uint8{1}).Equal(gguf.I8s([]int8{1})) || gguf.F32(1).Equal(gguf.F64(1)) || gguf.Str("a").Equal(gguf.Str("b")) {
		t.Error("Equal ignores types or contents")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.gguf")
	good := buildFile(t, everyValue()[:3], nil, 0)
	if err := os.WriteFile(path, good[:len(good)-2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := gguf.Open(path)
	var fe *gguf.FormatError
	if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), path+": gguf: ") {
		t.Errorf("truncated file: %v", err)
	}
	for _, p := range []string{filepath.Join(dir, "missing.gguf"), dir} {
		if _, err := gguf.Open(p); err == nil || errors.As(err, &fe) {
			t.Errorf("Open(%s) = %v, want an I/O error", p, err)
		}
	}
	empty := filepath.Join(dir, "empty.gguf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gguf.Open(empty); !errors.As(err, &fe) || fe.Offset != 0 {
		t.Errorf("empty file: %v", err)
	}
}
