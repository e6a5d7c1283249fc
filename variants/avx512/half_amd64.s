//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// Widening of n 16-bit floats at src to float32 at dst, 16 values a step,
// each step masked to what is left (no read or write past n values): load
// into Y1, convert into Z0, store.
#define WIDEN16(convert) \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), BX; \
	TESTQ BX, BX; \
	JLE  done; \
step: \
	MASK16(BX); \
	VMOVDQU16.Z (SI), K1, Y1; \
	convert; \
	VMOVUPS Z0, K1, (DI); \
	ADDQ $32, SI; \
	ADDQ $64, DI; \
	SUBQ $16, BX; \
	JG   step; \
done: \
	VZEROUPPER; \
	RET

// Y1 (16 halves) → Z0: IEEE halves by VCVTPH2PS; bfloat16 bits are a
// float32's high half.
#define F16_TO_F32 VCVTPH2PS Y1, Z0
#define BF16_TO_F32 VPMOVZXWD Y1, Z0; VPSLLD $16, Z0, Z0

// func dequantizeF16(dst *float32, src *byte, n int)
TEXT ·dequantizeF16(SB), NOSPLIT, $0-24
	WIDEN16(F16_TO_F32)

// func dequantizeBF16(dst *float32, src *byte, n int)
TEXT ·dequantizeBF16(SB), NOSPLIT, $0-24
	WIDEN16(BF16_TO_F32)
