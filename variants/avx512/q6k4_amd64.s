//go:build !noasm

#include "textflag.h"

// Q6_K × Q8_K, four rows per pass (VNNI): the four activation vectors, dx
// and the loop overhead are shared by four rows; the per-row block work is
// that of q6k_amd64.s (see there for the quant and scale layout).
//
// Register plan: Z0-Z3 activations, Z4/Z5 int sums, Z6-Z8 scratch, Z9 dx,
// Z10-Z13 quants and products, Z14 scale words, Z15 offset term, Z16-Z19
// spread scales, Z20-Z23 the rows' float sums, Z26-Z31 constants; BX = 0 as
// a null index. The scale spreading table is q6k_amd64.s's ·q6kScaleIdx.

// Quants of half a block at B+I (ql at qlOff, qh at qhOff) into lo (values
// 0-63) and hi (64-127), multiplied by the activations ylo and yhi.
#define HALF4(B, I, qlOff, qhOff, ylo, yhi, lo, hi) \
	VMOVDQU8 qlOff(B)(I*1), Z6; \
	VMOVDQU8 qhOff(B)(I*1), Y7; \
	VPSRLW $2, Y7, Y8; \
	VINSERTI64X4 $1, Y8, Z7, Z7; \
	VPSRLW $4, Z6, hi; \
	VPANDD Z31, Z6, lo; \
	VPANDD Z31, hi, hi; \
	VPSLLW $4, Z7, Z8; \
	VPANDD Z30, Z8, Z8; \
	VPORD Z8, lo, lo; \
	VPANDD Z30, Z7, Z7; \
	VPORD Z7, hi, hi; \
	VPMADDUBSW ylo, lo, lo; \
	VPMADDUBSW yhi, hi, hi

#define ROW_BLOCK6(B, I, acc) \
	VPMOVSXBW 192(B)(I*1), Y14; \
	VPERMW Z14, Z29, Z16; \
	VPERMW Z14, Z28, Z17; \
	VPERMW Z14, Z27, Z18; \
	VPERMW Z14, Z26, Z19; \
	HALF4(B, I, 0, 128, Z0, Z1, Z10, Z11); \
	HALF4(B, I, 64, 160, Z2, Z3, Z12, Z13); \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPDPWSSD Z16, Z10, Z4; \
	VPDPWSSD Z17, Z11, Z5; \
	VPDPWSSD Z18, Z12, Z4; \
	VPDPWSSD Z19, Z13, Z5; \
	VPADDD Z5, Z4, Z4; \
	VPMADDWD 260(DI), Y14, Y15; \
	VPSLLD $5, Y15, Y15; \
	VPSUBD Z15, Z4, Z4; \
	VCVTDQ2PS Z4, Z4; \
	MOVWLZX 208(B)(I*1), AX; \
	VMOVD AX, X6; \
	VCVTPH2PS X6, X6; \
	VMULSS X9, X6, X6; \
	VBROADCASTSS X6, Z6; \
	VFMADD231PS Z6, Z4, acc

// Reduce acc to one float at off(DX).
#define STORE6(acc, off) \
	VEXTRACTF64X4 $1, acc, Y7; \
	VEXTRACTF64X4 $0, acc, Y6; \
	VADDPS Y7, Y6, Y6; \
	VEXTRACTF128 $1, Y6, X7; \
	VADDPS X7, X6, X6; \
	VPSHUFD $0x4e, X6, X7; \
	VADDPS X7, X6, X6; \
	VPSHUFD $0xb1, X6, X7; \
	VADDSS X7, X6, X6; \
	VMOVSS X6, off(DX)

// func q6kRows4VNNI(dst *float32, rows int, w, xq *byte, nb int)
// rows is a positive multiple of 4.
TEXT ·q6kRows4VNNI(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ rows+8(FP), R8
	MOVQ w+16(FP), R13
	MOVQ xq+24(FP), R10
	MOVQ nb+32(FP), R9
	IMULQ $210, R9 // row bytes
	XORQ BX, BX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z30
	VMOVDQU64 ·q6kScaleIdx+0(SB), Z29
	VMOVDQU64 ·q6kScaleIdx+64(SB), Z28
	VMOVDQU64 ·q6kScaleIdx+128(SB), Z27
	VMOVDQU64 ·q6kScaleIdx+192(SB), Z26
group6:
	MOVQ R13, SI
	LEAQ (R13)(R9*2), R12
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
block6:
	VMOVDQU8 4(DI), Z0
	VMOVDQU8 68(DI), Z1
	VMOVDQU8 132(DI), Z2
	VMOVDQU8 196(DI), Z3
	VMOVSS (DI), X9
	ROW_BLOCK6(SI, BX, Z20)
	ROW_BLOCK6(SI, R9, Z21)
	ROW_BLOCK6(R12, BX, Z22)
	ROW_BLOCK6(R12, R9, Z23)
	ADDQ $210, SI
	ADDQ $210, R12
	ADDQ $292, DI
	DECQ CX
	JNZ block6
	STORE6(Z20, 0)
	STORE6(Z21, 4)
	STORE6(Z22, 8)
	STORE6(Z23, 12)
	ADDQ $16, DX
	LEAQ (R13)(R9*4), R13
	SUBQ $4, R8
	JNZ group6
	VZEROUPPER
	RET
