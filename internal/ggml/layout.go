package ggml

import "unsafe"

// typeTraits is struct ggml_type_traits (56 bytes), read from ggml's static table.
type typeTraits struct {
	typeName           *byte
	blckSize           int64
	blckSizeInterleave int64
	typeSize           uintptr
	isQuantized        bool
	_                  [7]byte
	toFloat            uintptr // void (*)(const void *, float *, int64_t)
	fromFloatRef       uintptr // void (*)(const float *, void *, int64_t)
}

// typeTraitsCPU is struct ggml_type_traits_cpu (32 bytes).
type typeTraitsCPU struct {
	fromFloat  uintptr // void (*)(const float *, void *, int64_t)
	vecDot     uintptr // void (*)(int n, float *s, size_t bs, const void *x, size_t bx, const void *y, size_t by, int nrc)
	vecDotType uint32  // enum ggml_type
	_          [4]byte
	nrows      int64
}

// Sizes the C compiler reported for ggml.h and ggml-cpu.h at commit 5b4ebc5.
const (
	sizeofTypeTraits    = 56
	sizeofTypeTraitsCPU = 32
)

// Compile-time size checks: (got/want)·(want/got) is 1 only when the two
// are equal, and any other array length does not convert to [1]struct{}.
var (
	_ [1]struct{} = [unsafe.Sizeof(typeTraits{}) / sizeofTypeTraits * (sizeofTypeTraits / unsafe.Sizeof(typeTraits{}))]struct{}{}
	_ [1]struct{} = [unsafe.Sizeof(typeTraitsCPU{}) / sizeofTypeTraitsCPU * (sizeofTypeTraitsCPU / unsafe.Sizeof(typeTraitsCPU{}))]struct{}{}
)
