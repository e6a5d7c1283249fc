//go:build !noasm

#include "textflag.h"

// The fp32 ops of a decode step. Every loop runs 16 lanes at a time under
// the mask K1 (all ones, then the tail's), so tails need no scalar code and
// masked-off lanes are neither read nor written. exp is exp_amd64.h's.

#include "exp_amd64.h"
#include "lanes_amd64.h"

// K1 = the low min(cnt, 16) bits, for cnt ≥ 1 (no clamp below: the loops
// here run while cnt > 0); clobbers AX, CX.
#undef MASK16
#define MASK16(cnt) MOVQ cnt, CX; MASK16_CX

DATA ropeDup<>+0(SB)/4, $0x00000000
DATA ropeDup<>+4(SB)/4, $0x00000000
DATA ropeDup<>+8(SB)/4, $0x00000001
DATA ropeDup<>+12(SB)/4, $0x00000001
DATA ropeDup<>+16(SB)/4, $0x00000002
DATA ropeDup<>+20(SB)/4, $0x00000002
DATA ropeDup<>+24(SB)/4, $0x00000003
DATA ropeDup<>+28(SB)/4, $0x00000003
DATA ropeDup<>+32(SB)/4, $0x00000004
DATA ropeDup<>+36(SB)/4, $0x00000004
DATA ropeDup<>+40(SB)/4, $0x00000005
DATA ropeDup<>+44(SB)/4, $0x00000005
DATA ropeDup<>+48(SB)/4, $0x00000006
DATA ropeDup<>+52(SB)/4, $0x00000006
DATA ropeDup<>+56(SB)/4, $0x00000007
DATA ropeDup<>+60(SB)/4, $0x00000007
GLOBL ropeDup<>(SB), RODATA|NOPTR, $64

DATA ropeSign<>+0(SB)/4, $0x80000000
DATA ropeSign<>+4(SB)/4, $0x00000000
DATA ropeSign<>+8(SB)/4, $0x80000000
DATA ropeSign<>+12(SB)/4, $0x00000000
DATA ropeSign<>+16(SB)/4, $0x80000000
DATA ropeSign<>+20(SB)/4, $0x00000000
DATA ropeSign<>+24(SB)/4, $0x80000000
DATA ropeSign<>+28(SB)/4, $0x00000000
DATA ropeSign<>+32(SB)/4, $0x80000000
DATA ropeSign<>+36(SB)/4, $0x00000000
DATA ropeSign<>+40(SB)/4, $0x80000000
DATA ropeSign<>+44(SB)/4, $0x00000000
DATA ropeSign<>+48(SB)/4, $0x80000000
DATA ropeSign<>+52(SB)/4, $0x00000000
DATA ropeSign<>+56(SB)/4, $0x80000000
DATA ropeSign<>+60(SB)/4, $0x00000000
GLOBL ropeSign<>(SB), RODATA|NOPTR, $64


// Sum the 8 doubles of Z10 and Z11 into X10.
#define HSUM_PD \
	VADDPD Z11, Z10, Z10; \
	VEXTRACTF64X4 $1, Z10, Y11; \
	VADDPD Y11, Y10, Y10; \
	VEXTRACTF128 $1, Y10, X11; \
	VADDPD X11, X10, X10; \
	VPERMILPD $1, X10, X11; \
	VADDSD X11, X10, X10

// Z1, Z2 = the low and high 8 floats of Z0 widened to double.
#define WIDEN_PD \
	VCVTPS2PD Y0, Z1; \
	VEXTRACTF64X4 $1, Z0, Y2; \
	VCVTPS2PD Y2, Z2

// func rmsNormAVX512(dst, x, w *float32, n int, eps float32)
TEXT ·rmsNormAVX512(SB), NOSPLIT, $0-36
	MOVQ x+8(FP), SI
	MOVQ n+24(FP), BX
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
rmsSquares:
	MASK16(BX)
	VMOVUPS.Z (SI), K1, Z0
	WIDEN_PD
	VFMADD231PD Z1, Z1, Z10
	VFMADD231PD Z2, Z2, Z11
	ADDQ $64, SI
	SUBQ $16, BX
	JG rmsSquares
	HSUM_PD
	MOVQ n+24(FP), BX
	VCVTSI2SDQ BX, X12, X12
	VDIVSD X12, X10, X10
	VCVTSD2SS X10, X10, X10
	VADDSS eps+32(FP), X10, X10
	VSQRTSS X10, X10, X10
	MOVL $0x3f800000, AX
	VMOVD AX, X12
	VDIVSS X10, X12, X10
	VBROADCASTSS X10, Z10
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
rmsScale:
	MASK16(BX)
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	VMULPS Z10, Z0, Z0
	VMULPS Z1, Z0, Z0
	VMOVUPS Z0, K1, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, BX
	JG rmsScale
	VZEROUPPER
	RET

// func siluMulAVX512(dst, gate, up *float32, n int)
TEXT ·siluMulAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), BX
	EXP_CONSTS
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z19
siluLoop:
	MASK16(BX)
	VMOVUPS.Z (SI), K1, Z4
	VPXORD Z19, Z4, Z0
	EXP
	VADDPS Z22, Z0, Z0
	VDIVPS Z0, Z4, Z4
	VMOVUPS.Z (DX), K1, Z5
	VMULPS Z5, Z4, Z4
	VMOVUPS Z4, K1, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, BX
	JG siluLoop
	VZEROUPPER
	RET

// func softmaxAVX512(x *float32, n int)
TEXT ·softmaxAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
	MOVL $0xff800000, AX // -Inf
	VPBROADCASTD AX, Z8
	VMOVAPS Z8, Z9
softMax:
	SOFTMAX_MAX_STEP
	ADDQ $64, SI
	SUBQ $16, BX
	JG softMax
	ALL_LANES(VMAXPS, Z9)
	EXP_CONSTS
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
softExp:
	SOFTMAX_EXP_STEP
	WIDEN_PD
	VADDPD Z1, Z10, Z10
	VADDPD Z2, Z11, Z11
	ADDQ $64, SI
	SUBQ $16, BX
	JG softExp
	HSUM_PD
	MOVQ $0x3ff0000000000000, AX // 1.0
	VMOVQ AX, X12
	VDIVSD X10, X12, X10
	VCVTSD2SS X10, X10, X10
	VBROADCASTSS X10, Z10
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
softScale:
	MASK16(BX)
	VMOVUPS.Z (SI), K1, Z0
	VMULPS Z10, Z0, Z0
	VMOVUPS Z0, K1, (SI)
	ADDQ $64, SI
	SUBQ $16, BX
	JG softScale
	VZEROUPPER
	RET

// func ropePairsAVX512(x *float32, nHeads, headDim int, cos, sin *float32)
//
// Adjacent pairs (2i, 2i+1): eight pairs per step; cos and sin are
// duplicated across each pair, sin signed [-s, +s], and the pair-swapped x
// supplies the cross term: out = x·c + swap(x)·(∓s).
TEXT ·ropePairsAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nHeads+8(FP), R8
	VMOVDQU32 ropeDup<>(SB), Z18
	VMOVDQU32 ropeSign<>(SB), Z17
pairsHead:
	MOVQ headDim+16(FP), BX
	SHRQ $1, BX
	MOVQ cos+24(FP), R11
	MOVQ sin+32(FP), R12
pairsStep:
	MOVQ BX, CX
	MOVQ $8, AX
	CMPQ CX, AX
	CMOVQGT AX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2
	SHLL $1, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (R11), K2, Y4
	VMOVUPS.Z (R12), K2, Y5
	VPERMPS Z4, Z18, Z6
	VPERMPS Z5, Z18, Z7
	VPXORD Z17, Z7, Z7
	VMOVUPS.Z (SI), K1, Z0
	VPERMILPS $0xb1, Z0, Z1
	VMULPS Z6, Z0, Z0
	VFMADD231PS Z7, Z1, Z0
	VMOVUPS Z0, K1, (SI)
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $64, SI
	SUBQ $8, BX
	JG pairsStep
	// SI overshot the head when the pair count is not a multiple of 8.
	MOVQ headDim+16(FP), BX
	SHRQ $1, BX
	ADDQ $7, BX
	ANDQ $-8, BX
	MOVQ headDim+16(FP), AX
	SHRQ $1, AX
	SUBQ AX, BX
	SHLQ $3, BX
	SUBQ BX, SI
	DECQ R8
	JNZ pairsHead
	VZEROUPPER
	RET

// func ropeNeoXAVX512(x *float32, nHeads, headDim int, cos, sin *float32)
//
// NeoX halves (i, i+headDim/2): sixteen pairs per step.
TEXT ·ropeNeoXAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nHeads+8(FP), R8
	MOVQ headDim+16(FP), R9
	SHLQ $1, R9 // half a head in bytes: headDim/2 · 4
neoxHead:
	MOVQ headDim+16(FP), BX
	SHRQ $1, BX
	MOVQ cos+24(FP), R11
	MOVQ sin+32(FP), R12
	MOVQ SI, DI
neoxStep:
	MASK16(BX)
	VMOVUPS.Z (R11), K1, Z4
	VMOVUPS.Z (R12), K1, Z5
	VMOVUPS.Z (DI), K1, Z0
	VMOVUPS.Z (DI)(R9*1), K1, Z1
	VMULPS Z4, Z0, Z2
	VFNMADD231PS Z5, Z1, Z2
	VMULPS Z5, Z0, Z3
	VFMADD231PS Z4, Z1, Z3
	VMOVUPS Z2, K1, (DI)
	VMOVUPS Z3, K1, (DI)(R9*1)
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, DI
	SUBQ $16, BX
	JG neoxStep
	LEAQ (SI)(R9*2), SI
	DECQ R8
	JNZ neoxHead
	VZEROUPPER
	RET
