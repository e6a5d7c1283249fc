//go:build !noasm

#include "textflag.h"

// Q4_K × Q8_K, four rows per pass (VNNI): the activation vectors, dx and
// the loop overhead are shared by four rows; each row keeps one float
// accumulator (the mins term is subtracted from it directly). The 6-bit
// scales and mins are unpacked in an XMM register, not in GPRs:
// [u0, u1, u2] = the 12 scale bytes as dwords,
//   scales = [u0 & 0x3f.., (u2 & 0x0f..) | (u0>>2 & 0x30..)],
//   mins   = [u1 & 0x3f.., (u2>>4 & 0x0f..) | (u1>>2 & 0x30..)].
//
// Register plan: Z0-Z3 activations, Z4/Z5 int sums, Z6-Z8 scratch, Z9 dx,
// Z10-Z13 products, Z14/Z15/Z24/Z25 the rows' float sums, Z16-Z19 scale
// words, Z20 scales, Z21 mins, Z22 dmin·dx, Z23 d·dx, Z26-Z31 constants;
// BX = 0 as a null index. The scale and min spreading tables are
// q4k_amd64.s's ·q4kScaleIdx and ·q4kMinIdx.

DATA q4k4Pick<>+0(SB)/4, $0x3f3f3f3f
DATA q4k4Pick<>+4(SB)/4, $0x0f0f0f0f
DATA q4k4Pick<>+8(SB)/4, $0x3f3f3f3f
DATA q4k4Pick<>+12(SB)/4, $0x0f0f0f0f
DATA q4k4Pick<>+16(SB)/4, $0x00000000
DATA q4k4Pick<>+20(SB)/4, $0x30303030
DATA q4k4Pick<>+24(SB)/4, $0x00000000
DATA q4k4Pick<>+28(SB)/4, $0x30303030
DATA q4k4Pick<>+32(SB)/4, $0
DATA q4k4Pick<>+36(SB)/4, $0
DATA q4k4Pick<>+40(SB)/4, $0
DATA q4k4Pick<>+44(SB)/4, $4
GLOBL q4k4Pick<>(SB), RODATA|NOPTR, $48

// One row's super-block at B+I: scales, mins term, four products, all into
// the float sum acc.
#define ROW_BLOCK(B, I, acc) \
	VMOVQ 4(B)(I*1), X6; \
	VPINSRD $2, 12(B)(I*1), X6, X6; \
	VPSHUFD $0x98, X6, X7; \
	VPSRLVD q4k4Pick<>+32(SB), X7, X7; \
	VPAND q4k4Pick<>+0(SB), X7, X7; \
	VPSHUFD $0x50, X6, X6; \
	VPSRLD $2, X6, X6; \
	VPAND q4k4Pick<>+16(SB), X6, X6; \
	VPOR X6, X7, X7; \
	VPBROADCASTQ X7, Z20; \
	VPSHUFD $0xee, X7, X7; \
	VPBROADCASTQ X7, Y21; \
	VPSHUFB Y26, Y21, Y21; \
	VPMADDWD 260(DI), Y21, Y21; \
	VCVTDQ2PS Y21, Y21; \
	VMOVD (B)(I*1), X6; \
	VCVTPH2PS X6, X6; \
	VMULPS X9, X6, X6; \
	VBROADCASTSS X6, Z23; \
	VMOVSHDUP X6, X6; \
	VBROADCASTSS X6, Z22; \
	VFNMADD231PS Z22, Z21, acc; \
	VPSHUFB Z30, Z20, Z16; \
	VPSHUFB Z29, Z20, Z17; \
	VPSHUFB Z28, Z20, Z18; \
	VPSHUFB Z27, Z20, Z19; \
	VMOVDQU8 16(B)(I*1), Z10; \
	VPSRLW $4, Z10, Z11; \
	VPANDD Z31, Z10, Z10; \
	VPANDD Z31, Z11, Z11; \
	VMOVDQU8 80(B)(I*1), Z12; \
	VPSRLW $4, Z12, Z13; \
	VPANDD Z31, Z12, Z12; \
	VPANDD Z31, Z13, Z13; \
	VPMADDUBSW Z0, Z10, Z10; \
	VPMADDUBSW Z1, Z11, Z11; \
	VPMADDUBSW Z2, Z12, Z12; \
	VPMADDUBSW Z3, Z13, Z13; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPDPWSSD Z16, Z10, Z4; \
	VPDPWSSD Z17, Z11, Z5; \
	VPDPWSSD Z18, Z12, Z4; \
	VPDPWSSD Z19, Z13, Z5; \
	VPADDD Z5, Z4, Z4; \
	VCVTDQ2PS Z4, Z4; \
	VFMADD231PS Z23, Z4, acc

// Reduce acc to one float at off(DX).
#define STORE(acc, off) \
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

// func q4kRows4VNNI(dst *float32, rows int, w, xq *byte, nb int)
// rows is a positive multiple of 4.
TEXT ·q4kRows4VNNI(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ rows+8(FP), R8
	MOVQ w+16(FP), R13
	MOVQ xq+24(FP), R10
	MOVQ nb+32(FP), R9
	IMULQ $144, R9 // row bytes
	XORQ BX, BX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	VMOVDQU64 ·q4kScaleIdx+0(SB), Z30
	VMOVDQU64 ·q4kScaleIdx+64(SB), Z29
	VMOVDQU64 ·q4kScaleIdx+128(SB), Z28
	VMOVDQU64 ·q4kScaleIdx+192(SB), Z27
	VMOVDQU64 ·q4kMinIdx+0(SB), Y26
group:
	MOVQ R13, SI
	LEAQ (R13)(R9*2), R12
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
block:
	VMOVDQU8 4(DI), Y0
	VINSERTI64X4 $1, 68(DI), Z0, Z0
	VMOVDQU8 36(DI), Y1
	VINSERTI64X4 $1, 100(DI), Z1, Z1
	VMOVDQU8 132(DI), Y2
	VINSERTI64X4 $1, 196(DI), Z2, Z2
	VMOVDQU8 164(DI), Y3
	VINSERTI64X4 $1, 228(DI), Z3, Z3
	VBROADCASTSS (DI), X9
	ROW_BLOCK(SI, BX, Z14)
	ROW_BLOCK(SI, R9, Z15)
	ROW_BLOCK(R12, BX, Z24)
	ROW_BLOCK(R12, R9, Z25)
	ADDQ $144, SI
	ADDQ $144, R12
	ADDQ $292, DI
	DECQ CX
	JNZ block
	STORE(Z14, 0)
	STORE(Z15, 4)
	STORE(Z24, 8)
	STORE(Z25, 12)
	ADDQ $16, DX
	LEAQ (R13)(R9*4), R13
	SUBQ $4, R8
	JNZ group
	VZEROUPPER
	RET
