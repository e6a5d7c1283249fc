package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ValueType is the type of a metadata value, numbered as in gguf.h
// (enum gguf_type).
type ValueType uint32

// The metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"}

// String returns gguf's short name for the type ("u32", "str", …).
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

func (t ValueType) known() bool { return t <= TypeFloat64 }

func (t ValueType) isUnsigned() bool {
	return t == TypeUint8 || t == TypeUint16 || t == TypeUint32 || t == TypeUint64
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

// minEncodedSize is the fewest bytes a value of type t takes in a file. The
// reader bounds every count by it before allocating.
func (t ValueType) minEncodedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64, TypeString:
		return 8 // a string is at least its u64 length
	case TypeArray:
		return 12 // element type u32 + count u64
	}
	return 0
}

// A Value is one metadata value: a scalar, a string, or an array whose
// elements all have one type (arrays may nest). The zero Value is u8 0.
//
// Values are immutable; slices they return are shared and must not be
// modified.
type Value struct {
	typ  ValueType
	elem ValueType // element type, for arrays
	num  uint64    // integers (two's complement), float bits, bool
	str  string
	arr  any // []uint8, []int8, …, []bool, []string, or []Value for arrays of arrays
}

// A KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// Scalar constructors.

func U8(x uint8) Value    { return Value{typ: TypeUint8, num: uint64(x)} }
func I8(x int8) Value     { return Value{typ: TypeInt8, num: uint64(int64(x))} }
func U16(x uint16) Value  { return Value{typ: TypeUint16, num: uint64(x)} }
func I16(x int16) Value   { return Value{typ: TypeInt16, num: uint64(int64(x))} }
func U32(x uint32) Value  { return Value{typ: TypeUint32, num: uint64(x)} }
func I32(x int32) Value   { return Value{typ: TypeInt32, num: uint64(int64(x))} }
func U64(x uint64) Value  { return Value{typ: TypeUint64, num: x} }
func I64(x int64) Value   { return Value{typ: TypeInt64, num: uint64(x)} }
func F32(x float32) Value { return Value{typ: TypeFloat32, num: uint64(math.Float32bits(x))} }
func F64(x float64) Value { return Value{typ: TypeFloat64, num: math.Float64bits(x)} }
func Str(s string) Value  { return Value{typ: TypeString, str: s} }

func Bool(b bool) Value {
	v := Value{typ: TypeBool}
	if b {
		v.num = 1
	}
	return v
}

// Typed array constructors. Each copies its argument.

func U8s(s []uint8) Value    { return arrayOf(TypeUint8, slices.Clone(s)) }
func I8s(s []int8) Value     { return arrayOf(TypeInt8, slices.Clone(s)) }
func U16s(s []uint16) Value  { return arrayOf(TypeUint16, slices.Clone(s)) }
func I16s(s []int16) Value   { return arrayOf(TypeInt16, slices.Clone(s)) }
func U32s(s []uint32) Value  { return arrayOf(TypeUint32, slices.Clone(s)) }
func I32s(s []int32) Value   { return arrayOf(TypeInt32, slices.Clone(s)) }
func U64s(s []uint64) Value  { return arrayOf(TypeUint64, slices.Clone(s)) }
func I64s(s []int64) Value   { return arrayOf(TypeInt64, slices.Clone(s)) }
func F32s(s []float32) Value { return arrayOf(TypeFloat32, slices.Clone(s)) }
func F64s(s []float64) Value { return arrayOf(TypeFloat64, slices.Clone(s)) }
func Bools(s []bool) Value   { return arrayOf(TypeBool, slices.Clone(s)) }
func Strs(s []string) Value  { return arrayOf(TypeString, slices.Clone(s)) }
func arrayOf(elem ValueType, s any) Value {
	return Value{typ: TypeArray, elem: elem, arr: s}
}

// Array returns an array of the given element type. Every value must have
// type elem (for elem TypeArray, every value must be an array); Array panics
// otherwise, as it is a programming mistake, not bad input.
func Array(elem ValueType, values ...Value) Value {
	for i, v := range values {
		if v.typ != elem {
			panic(fmt.Sprintf("gguf.Array: element %d is %s, want %s", i, v.typeName(), elem))
		}
	}
	switch elem {
	case TypeString:
		return arrayOf(elem, convert(values, func(v Value) string { return v.str }))
	case TypeArray:
		return arrayOf(elem, slices.Clone(values))
	}
	s := fixedArray(elem, len(values))
	if s == nil {
		panic(fmt.Sprintf("gguf.Array: unknown element type %s", elem))
	}
	// A number's or bool's num holds its bits as a file stores them: lay the
	// values out so and decode them, as the reader decodes an array.
	w := elem.minEncodedSize()
	b := make([]byte, 0, len(values)*w)
	var bits [8]byte
	for _, v := range values {
		binary.LittleEndian.PutUint64(bits[:], v.num)
		b = append(b, bits[:w]...)
	}
	if _, err := binary.Decode(b, binary.LittleEndian, s); err != nil {
		panic(err) // b holds exactly the elements of s
	}
	return arrayOf(elem, s)
}

// fixedArray returns a slice of n elements of elem, a number or bool type
// (nil for any other): the Go form of such arrays.
func fixedArray(elem ValueType, n int) any {
	switch elem {
	case TypeUint8:
		return make([]uint8, n)
	case TypeInt8:
		return make([]int8, n)
	case TypeUint16:
		return make([]uint16, n)
	case TypeInt16:
		return make([]int16, n)
	case TypeUint32:
		return make([]uint32, n)
	case TypeInt32:
		return make([]int32, n)
	case TypeUint64:
		return make([]uint64, n)
	case TypeInt64:
		return make([]int64, n)
	case TypeFloat32:
		return make([]float32, n)
	case TypeFloat64:
		return make([]float64, n)
	case TypeBool:
		return make([]bool, n)
	}
	return nil
}

func convert[T any](values []Value, f func(Value) T) []T {
	out := make([]T, len(values))
	for i, v := range values {
		out[i] = f(v)
	}
	return out
}

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// ElemType returns the element type of an array (meaningless for other values).
func (v Value) ElemType() ValueType { return v.elem }

// Len returns the number of elements of an array, 0 for other values.
func (v Value) Len() int {
	if v.typ != TypeArray {
		return 0
	}
	switch s := v.arr.(type) {
	case []uint8:
		return len(s)
	case []int8:
		return len(s)
	case []uint16:
		return len(s)
	case []int16:
		return len(s)
	case []uint32:
		return len(s)
	case []int32:
		return len(s)
	case []uint64:
		return len(s)
	case []int64:
		return len(s)
	case []float32:
		return len(s)
	case []float64:
		return len(s)
	case []bool:
		return len(s)
	case []string:
		return len(s)
	case []Value:
		return len(s)
	}
	return 0
}

// Index returns element i of an array as a Value. It panics if v is not an
// array or i is out of range, like indexing a slice.
func (v Value) Index(i int) Value {
	switch s := v.arr.(type) {
	case []uint8:
		return U8(s[i])
	case []int8:
		return I8(s[i])
	case []uint16:
		return U16(s[i])
	case []int16:
		return I16(s[i])
	case []uint32:
		return U32(s[i])
	case []int32:
		return I32(s[i])
	case []uint64:
		return U64(s[i])
	case []int64:
		return I64(s[i])
	case []float32:
		return F32(s[i])
	case []float64:
		return F64(s[i])
	case []bool:
		return Bool(s[i])
	case []string:
		return Str(s[i])
	case []Value:
		return s[i]
	}
	panic(fmt.Sprintf("gguf: Index of a %s value", v.typ))
}

// Slice returns an array's elements as a typed slice: []uint8, []int8,
// []uint16, []int16, []uint32, []int32, []uint64, []int64, []float32,
// []float64, []bool, []string, or []Value for arrays of arrays. It returns
// nil for other values. The slice is shared: do not modify it.
func (v Value) Slice() any {
	if v.typ != TypeArray {
		return nil
	}
	return v.arr
}

// Uint64 returns an integer value as uint64; ok is false for non-integers
// and negative values.
func (v Value) Uint64() (x uint64, ok bool) {
	switch {
	case v.typ.isUnsigned():
		return v.num, true
	case v.typ.isSigned() && int64(v.num) >= 0:
		return v.num, true
	}
	return 0, false
}

// Int64 returns an integer value as int64; ok is false for non-integers and
// unsigned values above math.MaxInt64.
func (v Value) Int64() (x int64, ok bool) {
	switch {
	case v.typ.isSigned():
		return int64(v.num), true
	case v.typ.isUnsigned() && v.num <= math.MaxInt64:
		return int64(v.num), true
	}
	return 0, false
}

// Float64 returns an f32 or f64 value as float64.
func (v Value) Float64() (x float64, ok bool) {
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.num))), true
	case TypeFloat64:
		return math.Float64frombits(v.num), true
	}
	return 0, false
}

// Bool returns a bool value.
func (v Value) Bool() (b, ok bool) {
	if v.typ != TypeBool {
		return false, false
	}
	return v.num != 0, true
}

// Str returns a string value.
func (v Value) Str() (s string, ok bool) {
	if v.typ != TypeString {
		return "", false
	}
	return v.str, true
}

// Equal reports whether v and w have the same type and contents; floats are
// compared bit for bit, so NaNs with equal bits are equal.
func (v Value) Equal(w Value) bool {
	if v.typ != w.typ {
		return false
	}
	switch v.typ {
	case TypeString:
		return v.str == w.str
	case TypeArray:
		if v.elem != w.elem || v.Len() != w.Len() {
			return false
		}
		switch a := v.arr.(type) {
		case []float32:
			return slices.EqualFunc(a, w.arr.([]float32), func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
		case []float64:
			return slices.EqualFunc(a, w.arr.([]float64), func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
		}
		for i := range v.Len() {
			if !v.Index(i).Equal(w.Index(i)) {
				return false
			}
		}
		return true
	}
	return v.num == w.num
}

// typeName names the value's full type: "u32", "[]str", "[][]f32".
func (v Value) typeName() string {
	if v.typ != TypeArray {
		return v.typ.String()
	}
	if v.elem == TypeArray && v.Len() > 0 {
		return "[]" + v.Index(0).typeName()
	}
	return "[]" + v.elem.String()
}

// maxShown is how many array elements String prints before eliding.
const maxShown = 8

// String formats the value for people: strings quoted, long arrays elided
// ("[1, 2, 3, … (512 items)]").
func (v Value) String() string {
	switch v.typ {
	case TypeString:
		return strconv.Quote(v.str)
	case TypeBool:
		return strconv.FormatBool(v.num != 0)
	case TypeFloat32:
		return strconv.FormatFloat(float64(math.Float32frombits(uint32(v.num))), 'g', -1, 32)
	case TypeFloat64:
		return strconv.FormatFloat(math.Float64frombits(v.num), 'g', -1, 64)
	case TypeArray:
		var b strings.Builder
		b.WriteByte('[')
		n := v.Len()
		for i := range min(n, maxShown) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.Index(i).String())
		}
		if n > maxShown {
			fmt.Fprintf(&b, ", … (%d items)", n)
		}
		b.WriteByte(']')
		return b.String()
	}
	if v.typ.isSigned() {
		return strconv.FormatInt(int64(v.num), 10)
	}
	return strconv.FormatUint(v.num, 10)
}
