//go:build linux && amd64

package ggml

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/damascus-llm/damascus/quant"
)

// Traits returns ggml's facts about type t, read from libggml-base
// (ggml_type_name, ggml_blck_size, ggml_type_size, ggml_get_type_traits) and
// the CPU backend (ggml_get_type_traits_cpu).
func Traits(t quant.Type) (TypeTraits, error) {
	l, tt, err := libTraits(t)
	if err != nil {
		return TypeTraits{}, err
	}
	out := TypeTraits{
		Name:          l.ggmlTypeName(uint32(t)),
		BlockSize:     int(l.ggmlBlckSize(uint32(t))),
		TypeSize:      int(l.ggmlTypeSize(uint32(t))),
		Quantized:     tt.isQuantized,
		CanDequantize: tt.toFloat != 0,
	}
	out.CanQuantize = quantizable(t) && !l.ggmlQuantizeNeedIM(uint32(t))
	if ct := l.ggmlGetTypeTraitsCPU(uint32(t)); ct != nil && ct.vecDot != 0 {
		out.HasVecDot = true
		out.VecDotType = quant.Type(ct.vecDotType)
	}
	return out, nil
}

// quantizable lists the types ggml_quantize_chunk handles (its switch at
// commit 5b4ebc5): every other type aborts the process.
func quantizable(t quant.Type) bool {
	switch t {
	case quant.F32, quant.F16, quant.BF16,
		quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q8_0,
		quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K,
		quant.TQ1_0, quant.TQ2_0,
		quant.IQ2_XXS, quant.IQ2_XS, quant.IQ3_XXS, quant.IQ3_S, quant.IQ2_S,
		quant.IQ1_S, quant.IQ1_M, quant.IQ4_NL, quant.IQ4_XS, quant.MXFP4:
		return true
	}
	return false
}

// traits returns ggml's type-table entry, or an error for ids ggml does not
// know (beyond its enum, or retired).
func (l *lib) traits(t quant.Type) (*typeTraits, error) {
	if uint32(t) >= TypeCount {
		return nil, fmt.Errorf("ggml has no tensor type %d (GGML_TYPE_COUNT is %d)", uint32(t), TypeCount)
	}
	tt := l.ggmlGetTypeTraits(uint32(t))
	if tt == nil || tt.blckSize == 0 {
		return nil, fmt.Errorf("ggml has no tensor type %d (retired id)", uint32(t))
	}
	return tt, nil
}

// libTraits loads the library (get) and returns it with its traits of type t.
func libTraits(t quant.Type) (*lib, *typeTraits, error) {
	l, err := get()
	if err != nil {
		return nil, nil, err
	}
	tt, err := l.traits(t)
	if err != nil {
		return nil, nil, err
	}
	return l, tt, nil
}

// Dequantize converts n values of type t stored in src into float32 with
// ggml's own to_float. src must hold exactly the bytes of n values.
func Dequantize(t quant.Type, src []byte, n int) ([]float32, error) {
	_, tt, err := libTraits(t)
	if err != nil {
		return nil, err
	}
	if tt.toFloat == 0 {
		return nil, fmt.Errorf("ggml dequantize %s: ggml has no to_float for this type", t)
	}
	if err := checkSize(t, tt, len(src), n); err != nil {
		return nil, fmt.Errorf("ggml dequantize: %w", err)
	}
	dst := make([]float32, n)
	if n == 0 {
		return dst, nil
	}
	rowFunc(tt.toFloat)(unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0]), int64(n))
	return dst, nil
}

// Quantize converts nrows rows of nPerRow float32 values with
// ggml_quantize_chunk (no importance matrix): ggml's reference quantizer for
// the type. Non-finite input is rejected, as some ggml quantizers abort on it.
func Quantize(t quant.Type, src []float32, nrows, nPerRow int) ([]byte, error) {
	l, tt, err := libTraits(t)
	if err != nil {
		return nil, err
	}
	if !quantizable(t) {
		return nil, fmt.Errorf("ggml quantize %s: ggml_quantize_chunk does not handle this type", t)
	}
	if l.ggmlQuantizeNeedIM(uint32(t)) {
		return nil, fmt.Errorf("ggml quantize %s: needs an importance matrix", t)
	}
	if nrows < 0 || nPerRow < 0 || len(src) != nrows*nPerRow {
		return nil, fmt.Errorf("ggml quantize %s: %d values given for %d rows of %d", t, len(src), nrows, nPerRow)
	}
	if nPerRow%int(tt.blckSize) != 0 {
		return nil, fmt.Errorf("ggml quantize %s: row of %d values is not a multiple of the block size %d", t, nPerRow, tt.blckSize)
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("ggml quantize %s: value %d is %v", t, i, v)
		}
	}
	rowBytes := nPerRow / int(tt.blckSize) * int(tt.typeSize)
	dst := make([]byte, nrows*rowBytes)
	if len(dst) == 0 {
		return dst, nil
	}
	got := l.ggmlQuantizeChunk(uint32(t), &src[0], unsafe.Pointer(&dst[0]), 0, int64(nrows), int64(nPerRow), nil)
	if int(got) != len(dst) {
		return nil, fmt.Errorf("ggml quantize %s: wrote %d bytes, want %d", t, got, len(dst))
	}
	return dst, nil
}

// QuantizeRowCPU converts src with the CPU backend's from_float for t: the
// quantizer llama.cpp applies to activations at run time (for example Q8_K for
// the Q4_K dot product), which may differ from the reference one in Quantize.
func QuantizeRowCPU(t quant.Type, src []float32) ([]byte, error) {
	l, tt, err := libTraits(t)
	if err != nil {
		return nil, err
	}
	ct := l.ggmlGetTypeTraitsCPU(uint32(t))
	if ct == nil || ct.fromFloat == 0 {
		return nil, fmt.Errorf("ggml CPU quantize %s: the CPU backend has no from_float for this type", t)
	}
	if len(src)%int(tt.blckSize) != 0 {
		return nil, fmt.Errorf("ggml CPU quantize %s: %d values is not a multiple of the block size %d", t, len(src), tt.blckSize)
	}
	dst := make([]byte, len(src)/int(tt.blckSize)*int(tt.typeSize))
	if len(dst) == 0 {
		return dst, nil
	}
	rowFunc(ct.fromFloat)(unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0]), int64(len(src)))
	return dst, nil
}

// VecDot returns the CPU backend's dot product of n values: x of type t and y
// of t's VecDotType (see Traits), as llama.cpp computes it in a matrix product.
func VecDot(t quant.Type, n int, x, y []byte) (float32, error) {
	l, tt, err := libTraits(t)
	if err != nil {
		return 0, err
	}
	ct := l.ggmlGetTypeTraitsCPU(uint32(t))
	if ct == nil || ct.vecDot == 0 {
		return 0, fmt.Errorf("ggml vec_dot %s: the CPU backend has no vec_dot for this type", t)
	}
	yt := quant.Type(ct.vecDotType)
	ytt, err := l.traits(yt)
	if err != nil {
		return 0, fmt.Errorf("ggml vec_dot %s: %w", t, err)
	}
	if err := checkSize(t, tt, len(x), n); err != nil {
		return 0, fmt.Errorf("ggml vec_dot x: %w", err)
	}
	if err := checkSize(yt, ytt, len(y), n); err != nil {
		return 0, fmt.Errorf("ggml vec_dot y: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var s float32
	vecDotFunc(ct.vecDot)(int32(n), &s, 0, unsafe.Pointer(&x[0]), 0, unsafe.Pointer(&y[0]), 0, 1)
	return s, nil
}

// ValidRowData runs ggml_validate_row_data on data, whole blocks of type t:
// false means ggml would reject the tensor (NaN or Inf in a value or a block
// scale). It is the check llama.cpp applies to tensors with check_tensors.
func ValidRowData(t quant.Type, data []byte) (bool, error) {
	l, tt, err := libTraits(t)
	if err != nil {
		return false, err
	}
	if len(data)%int(tt.typeSize) != 0 {
		return false, fmt.Errorf("ggml validate %s: %d bytes is not a whole number of %d-byte blocks", t, len(data), tt.typeSize)
	}
	if len(data) == 0 {
		return true, nil
	}
	return l.ggmlValidateRow(uint32(t), unsafe.Pointer(&data[0]), uintptr(len(data))), nil
}

func checkSize(t quant.Type, tt *typeTraits, nbytes, n int) error {
	bs, ts := int(tt.blckSize), int(tt.typeSize)
	if n < 0 || n%bs != 0 {
		return fmt.Errorf("%s: %d values is not a multiple of the block size %d", t, n, bs)
	}
	if want := n / bs * ts; nbytes != want {
		return fmt.Errorf("%s: %d values take %d bytes, got %d", t, n, want, nbytes)
	}
	return nil
}

// Function pointers from ggml's tables, bound once each.
var (
	fnMu     sync.Mutex
	rowFuncs = map[uintptr]func(x, y unsafe.Pointer, k int64){}
	dotFuncs = map[uintptr]func(n int32, s *float32, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32){}
)

// rowFunc binds a to_float or from_float pointer: void (*)(const void *, void *, int64_t).
func rowFunc(p uintptr) func(x, y unsafe.Pointer, k int64) { return bound(rowFuncs, p) }

// vecDotFunc binds a ggml_vec_dot_t pointer.
func vecDotFunc(p uintptr) func(n int32, s *float32, bs uintptr, x unsafe.Pointer, bx uintptr, y unsafe.Pointer, by uintptr, nrc int32) {
	return bound(dotFuncs, p)
}

// bound returns the Go function bound to the C function pointer p, binding
// it on first use and keeping it in funcs.
func bound[F any](funcs map[uintptr]F, p uintptr) F {
	fnMu.Lock()
	defer fnMu.Unlock()
	f, ok := funcs[p]
	if !ok {
		purego.RegisterFunc(&f, p)
		funcs[p] = f
	}
	return f
}
