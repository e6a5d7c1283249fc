//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// Widening of 16-bit floats to float32, 16 values a step, the last step
// masked (no read or write past n values).

// func dequantizeF16(dst *float32, src *byte, n int)
TEXT ·dequantizeF16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), BX

f16Loop:
	CMPQ BX, $16
	JLT  f16Tail
	VCVTPH2PS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, BX
	JMP  f16Loop

f16Tail:
	TESTQ BX, BX
	JLE   f16Done
	MASK16(BX)
	VMOVDQU16.Z (SI), K1, Y1
	VCVTPH2PS Y1, Z0
	VMOVUPS Z0, K1, (DI)

f16Done:
	VZEROUPPER
	RET

// func dequantizeBF16(dst *float32, src *byte, n int)
TEXT ·dequantizeBF16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), BX

bf16Loop:
	CMPQ BX, $16
	JLT  bf16Tail
	VPMOVZXWD (SI), Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, BX
	JMP  bf16Loop

bf16Tail:
	TESTQ BX, BX
	JLE   bf16Done
	MASK16(BX)
	VMOVDQU16.Z (SI), K1, Y1
	VPMOVZXWD Y1, Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, K1, (DI)

bf16Done:
	VZEROUPPER
	RET
