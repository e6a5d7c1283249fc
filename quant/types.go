// Package quant holds ggml's tensor block formats: their layouts, scalar
// dequantization and reference quantization. The bytes of a block are facts
// of the format; ggml's own functions are the oracle the tests compare with.
package quant

import (
	"fmt"
	"maps"
	"slices"
)

// Type is a ggml tensor type, numbered as in ggml.h (enum ggml_type).
type Type uint32

// The ggml type ids. Gaps are ids ggml has retired.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

// QK_K is the number of values in a K-quant super-block.
const QK_K = 256

type traits struct {
	name      string
	blockSize int // values per block
	typeSize  int // bytes per block
}

var table = map[Type]traits{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	Q4_0:    {"Q4_0", 32, 18},
	Q4_1:    {"Q4_1", 32, 20},
	Q5_0:    {"Q5_0", 32, 22},
	Q5_1:    {"Q5_1", 32, 24},
	Q8_0:    {"Q8_0", 32, 34},
	Q8_1:    {"Q8_1", 32, 36},
	Q2_K:    {"Q2_K", QK_K, 84},
	Q3_K:    {"Q3_K", QK_K, 110},
	Q4_K:    {"Q4_K", QK_K, 144},
	Q5_K:    {"Q5_K", QK_K, 176},
	Q6_K:    {"Q6_K", QK_K, 210},
	Q8_K:    {"Q8_K", QK_K, 292},
	IQ2_XXS: {"IQ2_XXS", QK_K, 66},
	IQ2_XS:  {"IQ2_XS", QK_K, 74},
	IQ3_XXS: {"IQ3_XXS", QK_K, 98},
	IQ1_S:   {"IQ1_S", QK_K, 50},
	IQ4_NL:  {"IQ4_NL", 32, 18},
	IQ3_S:   {"IQ3_S", QK_K, 110},
	IQ2_S:   {"IQ2_S", QK_K, 82},
	IQ4_XS:  {"IQ4_XS", QK_K, 136},
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	F64:     {"F64", 1, 8},
	IQ1_M:   {"IQ1_M", QK_K, 56},
	BF16:    {"BF16", 1, 2},
	TQ1_0:   {"TQ1_0", QK_K, 54},
	TQ2_0:   {"TQ2_0", QK_K, 66},
	MXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether t is a type this package knows the layout of.
func (t Type) Known() bool { _, ok := table[t]; return ok }

// KnownTypes returns every type this package knows the layout of, in id
// order: what tests that cover each format range over.
func KnownTypes() []Type { return slices.Sorted(maps.Keys(table)) }

// String returns ggml's name for the type, or "type(N)" for an unknown id.
func (t Type) String() string {
	if tr, ok := table[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of values one block holds (1 for plain types).
// It is 0 for an unknown type.
func (t Type) BlockSize() int { return table[t].blockSize }

// TypeSize is the number of bytes one block occupies. It is 0 for an unknown type.
func (t Type) TypeSize() int { return table[t].typeSize }

// ParseType returns the type with ggml's name s (for example "Q4_K").
func ParseType(s string) (Type, error) {
	for t, tr := range table {
		if tr.name == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q", s)
}

// RowSize returns the bytes a row of n values takes, or an error when n is not
// a whole number of blocks or the type is unknown.
func RowSize(t Type, n int64) (int64, error) {
	tr, ok := table[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %s", t)
	}
	if n < 0 || n%int64(tr.blockSize) != 0 {
		return 0, fmt.Errorf("%s: row of %d values is not a multiple of the block size %d", t, n, tr.blockSize)
	}
	return n / int64(tr.blockSize) * int64(tr.typeSize), nil
}
