//go:build !noasm

#include "textflag.h"

// The fp32 ops of a decode step on 256-bit vectors. Loops run 8 lanes at a
// time under a lane mask (all ones, then the tail's) through VMASKMOVPS, so
// masked-off lanes are neither read nor written.
//
// exp is Cephes' expf with x clamped to [-87.3, 88.3], so that 2^n can be
// built in the exponent bits; beyond the clamp the result is set to 0 or
// +Inf (so exp(x) for x in (88.3, 88.72] reads +Inf, not a finite value).

DATA expConst<>+0(SB)/4, $0x3fb8aa3b // log2e
DATA expConst<>+4(SB)/4, $0x3f318000 // c1
DATA expConst<>+8(SB)/4, $0xb95e8083 // c2
DATA expConst<>+12(SB)/4, $0x39506967 // p0
DATA expConst<>+16(SB)/4, $0x3ab743ce // p1
DATA expConst<>+20(SB)/4, $0x3c088908 // p2
DATA expConst<>+24(SB)/4, $0x3d2aa9c1 // p3
DATA expConst<>+28(SB)/4, $0x3e2aaaaa // p4
DATA expConst<>+32(SB)/4, $0x3f000000 // p5
DATA expConst<>+36(SB)/4, $0x3f800000 // one
DATA expConst<>+40(SB)/4, $0x42b0999a // hi
DATA expConst<>+44(SB)/4, $0xc2ae999a // lo
DATA expConst<>+48(SB)/4, $0x7f800000 // inf
DATA expConst<>+52(SB)/4, $127
DATA expConst<>+56(SB)/4, $0xff800000 // -inf
DATA expConst<>+60(SB)/4, $0x80000000 // sign
GLOBL expConst<>(SB), RODATA|NOPTR, $64
DATA tailMask<>+0(SB)/4, $0xffffffff
DATA tailMask<>+4(SB)/4, $0xffffffff
DATA tailMask<>+8(SB)/4, $0xffffffff
DATA tailMask<>+12(SB)/4, $0xffffffff
DATA tailMask<>+16(SB)/4, $0xffffffff
DATA tailMask<>+20(SB)/4, $0xffffffff
DATA tailMask<>+24(SB)/4, $0xffffffff
DATA tailMask<>+28(SB)/4, $0xffffffff
DATA tailMask<>+32(SB)/4, $0x00000000
DATA tailMask<>+36(SB)/4, $0x00000000
DATA tailMask<>+40(SB)/4, $0x00000000
DATA tailMask<>+44(SB)/4, $0x00000000
DATA tailMask<>+48(SB)/4, $0x00000000
DATA tailMask<>+52(SB)/4, $0x00000000
DATA tailMask<>+56(SB)/4, $0x00000000
DATA tailMask<>+60(SB)/4, $0x00000000
GLOBL tailMask<>(SB), RODATA|NOPTR, $64
DATA ropeDup<>+0(SB)/4, $0
DATA ropeDup<>+4(SB)/4, $0
DATA ropeDup<>+8(SB)/4, $1
DATA ropeDup<>+12(SB)/4, $1
DATA ropeDup<>+16(SB)/4, $2
DATA ropeDup<>+20(SB)/4, $2
DATA ropeDup<>+24(SB)/4, $3
DATA ropeDup<>+28(SB)/4, $3
GLOBL ropeDup<>(SB), RODATA|NOPTR, $32
DATA ropeSign<>+0(SB)/4, $0x80000000
DATA ropeSign<>+4(SB)/4, $0x00000000
DATA ropeSign<>+8(SB)/4, $0x80000000
DATA ropeSign<>+12(SB)/4, $0x00000000
DATA ropeSign<>+16(SB)/4, $0x80000000
DATA ropeSign<>+20(SB)/4, $0x00000000
DATA ropeSign<>+24(SB)/4, $0x80000000
DATA ropeSign<>+28(SB)/4, $0x00000000
GLOBL ropeSign<>(SB), RODATA|NOPTR, $32

#define C_LOG2E expConst<>+0(SB)
#define C_C1 expConst<>+4(SB)
#define C_C2 expConst<>+8(SB)
#define C_P0 expConst<>+12(SB)
#define C_P1 expConst<>+16(SB)
#define C_P2 expConst<>+20(SB)
#define C_P3 expConst<>+24(SB)
#define C_P4 expConst<>+28(SB)
#define C_P5 expConst<>+32(SB)
#define C_ONE expConst<>+36(SB)
#define C_HI expConst<>+40(SB)
#define C_LO expConst<>+44(SB)
#define C_INF expConst<>+48(SB)
#define C_127 expConst<>+52(SB)
#define C_NEGINF expConst<>+56(SB)
#define C_SIGN expConst<>+60(SB)

// Y15 = mask of the first min(cnt, 8) lanes; clobbers AX, CX.
#define TAILMASK(cnt) \
	MOVQ cnt, CX; \
	MOVQ $8, AX; \
	CMPQ CX, AX; \
	CMOVQGT AX, CX; \
	NEGQ CX; \
	LEAQ tailMask<>+32(SB), AX; \
	VMOVDQU (AX)(CX*4), Y15

// Y0 = exp(Y0); clobbers Y1-Y5.
#define EXP \
	VMOVAPS Y0, Y4; \
	VBROADCASTSS C_HI, Y5; \
	VMINPS Y5, Y0, Y0; \
	VBROADCASTSS C_LO, Y5; \
	VMAXPS Y5, Y0, Y0; \
	VBROADCASTSS C_LOG2E, Y5; \
	VMULPS Y5, Y0, Y1; \
	VROUNDPS $0, Y1, Y1; \
	VBROADCASTSS C_C1, Y5; \
	VFNMADD231PS Y5, Y1, Y0; \
	VBROADCASTSS C_C2, Y5; \
	VFNMADD231PS Y5, Y1, Y0; \
	VBROADCASTSS C_P0, Y2; \
	VBROADCASTSS C_P1, Y5; \
	VFMADD213PS Y5, Y0, Y2; \
	VBROADCASTSS C_P2, Y5; \
	VFMADD213PS Y5, Y0, Y2; \
	VBROADCASTSS C_P3, Y5; \
	VFMADD213PS Y5, Y0, Y2; \
	VBROADCASTSS C_P4, Y5; \
	VFMADD213PS Y5, Y0, Y2; \
	VBROADCASTSS C_P5, Y5; \
	VFMADD213PS Y5, Y0, Y2; \
	VMULPS Y0, Y0, Y3; \
	VFMADD213PS Y0, Y3, Y2; \
	VBROADCASTSS C_ONE, Y5; \
	VADDPS Y5, Y2, Y2; \
	VCVTPS2DQ Y1, Y1; \
	VPBROADCASTD C_127, Y5; \
	VPADDD Y5, Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VMULPS Y1, Y2, Y0; \
	VBROADCASTSS C_HI, Y5; \
	VCMPPS $0x1e, Y5, Y4, Y1; \
	VBROADCASTSS C_INF, Y5; \
	VBLENDVPS Y1, Y5, Y0, Y0; \
	VBROADCASTSS C_LO, Y5; \
	VCMPPS $0x11, Y5, Y4, Y1; \
	VANDNPS Y0, Y1, Y0

// func rmsNormAVX2(dst, x, w *float32, n int, eps float32)
TEXT ·rmsNormAVX2(SB), NOSPLIT, $0-36
	MOVQ x+8(FP), SI
	MOVQ n+24(FP), BX
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
rmsSquares:
	TAILMASK(BX)
	VMASKMOVPS (SI), Y15, Y0
	VCVTPS2PD X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD X2, Y2
	VFMADD231PD Y1, Y1, Y10
	VFMADD231PD Y2, Y2, Y11
	ADDQ $32, SI
	SUBQ $8, BX
	JG rmsSquares
	VADDPD Y11, Y10, Y10
	VEXTRACTF128 $1, Y10, X11
	VADDPD X11, X10, X10
	VPERMILPD $1, X10, X11
	VADDSD X11, X10, X10
	MOVQ n+24(FP), BX
	VCVTSI2SDQ BX, X12, X12
	VDIVSD X12, X10, X10
	VCVTSD2SS X10, X10, X10
	VADDSS eps+32(FP), X10, X10
	VSQRTSS X10, X10, X10
	VBROADCASTSS C_ONE, X12
	VDIVSS X10, X12, X10
	VBROADCASTSS X10, Y10
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
rmsScale:
	TAILMASK(BX)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DX), Y15, Y1
	VMULPS Y10, Y0, Y0
	VMULPS Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, BX
	JG rmsScale
	VZEROUPPER
	RET

// func siluMulAVX2(dst, gate, up *float32, n int)
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), BX
siluLoop:
	TAILMASK(BX)
	VMASKMOVPS (SI), Y15, Y6
	VBROADCASTSS C_SIGN, Y5
	VXORPS Y5, Y6, Y0
	EXP
	VBROADCASTSS C_ONE, Y5
	VADDPS Y5, Y0, Y0
	VDIVPS Y0, Y6, Y6
	VMASKMOVPS (DX), Y15, Y7
	VMULPS Y7, Y6, Y6
	VMASKMOVPS Y6, Y15, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, BX
	JG siluLoop
	VZEROUPPER
	RET

// func softmaxAVX2(x *float32, n int)
TEXT ·softmaxAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
	VBROADCASTSS C_NEGINF, Y8
	VMOVAPS Y8, Y9
softMax:
	TAILMASK(BX)
	VMASKMOVPS (SI), Y15, Y0
	VBLENDVPS Y15, Y0, Y8, Y0
	VMAXPS Y0, Y9, Y9
	ADDQ $32, SI
	SUBQ $8, BX
	JG softMax
	VPERM2F128 $1, Y9, Y9, Y0
	VMAXPS Y0, Y9, Y9
	VPERMILPS $0x4e, Y9, Y0
	VMAXPS Y0, Y9, Y9
	VPERMILPS $0xb1, Y9, Y0
	VMAXPS Y0, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
softExp:
	TAILMASK(BX)
	VMASKMOVPS (SI), Y15, Y0
	VSUBPS Y9, Y0, Y0
	EXP
	VANDPS Y15, Y0, Y0
	VMASKMOVPS Y0, Y15, (SI)
	VCVTPS2PD X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD X2, Y2
	VADDPD Y1, Y10, Y10
	VADDPD Y2, Y11, Y11
	ADDQ $32, SI
	SUBQ $8, BX
	JG softExp
	VADDPD Y11, Y10, Y10
	VEXTRACTF128 $1, Y10, X11
	VADDPD X11, X10, X10
	VPERMILPD $1, X10, X11
	VADDSD X11, X10, X10
	MOVQ $0x3ff0000000000000, AX // 1.0
	VMOVQ AX, X12
	VDIVSD X10, X12, X10
	VCVTSD2SS X10, X10, X10
	VBROADCASTSS X10, Y10
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
softScale:
	TAILMASK(BX)
	VMASKMOVPS (SI), Y15, Y0
	VMULPS Y10, Y0, Y0
	VMASKMOVPS Y0, Y15, (SI)
	ADDQ $32, SI
	SUBQ $8, BX
	JG softScale
	VZEROUPPER
	RET

// func ropePairsAVX2(x *float32, nHeads, headDim int, cos, sin *float32)
//
// Adjacent pairs: four pairs per step, cos and sin duplicated across each
// pair, sin signed [-s, +s]; out = x·c + swap(x)·(∓s).
TEXT ·ropePairsAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nHeads+8(FP), R8
	VMOVDQU ropeDup<>(SB), Y13
	VMOVDQU ropeSign<>(SB), Y12
pairsHead:
	MOVQ headDim+16(FP), BX
	SHRQ $1, BX
	MOVQ cos+24(FP), R11
	MOVQ sin+32(FP), R12
	MOVQ SI, DI
pairsStep:
	// Y14 = mask of min(pairs, 4) lanes (for cos, sin); Y15 = twice that.
	MOVQ BX, R9
	MOVQ $4, AX
	CMPQ R9, AX
	CMOVQGT AX, R9
	MOVQ R9, CX
	NEGQ CX
	LEAQ tailMask<>+32(SB), AX
	VMOVDQU (AX)(CX*4), Y14
	SHLQ $1, R9
	TAILMASK(R9)
	VMASKMOVPS (R11), X14, X4
	VMASKMOVPS (R12), X14, X5
	VPERMPS Y4, Y13, Y6
	VPERMPS Y5, Y13, Y7
	VXORPS Y12, Y7, Y7
	VMASKMOVPS (DI), Y15, Y0
	VPERMILPS $0xb1, Y0, Y1
	VMULPS Y6, Y0, Y0
	VFMADD231PS Y7, Y1, Y0
	VMASKMOVPS Y0, Y15, (DI)
	ADDQ $16, R11
	ADDQ $16, R12
	ADDQ $32, DI
	SUBQ $4, BX
	JG pairsStep
	MOVQ headDim+16(FP), AX
	LEAQ (SI)(AX*4), SI
	DECQ R8
	JNZ pairsHead
	VZEROUPPER
	RET

// func ropeNeoXAVX2(x *float32, nHeads, headDim int, cos, sin *float32)
//
// NeoX halves (i, i+headDim/2): eight pairs per step.
TEXT ·ropeNeoXAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nHeads+8(FP), R8
	MOVQ headDim+16(FP), R9
	SHLQ $1, R9 // half a head in bytes
neoxHead:
	MOVQ headDim+16(FP), BX
	SHRQ $1, BX
	MOVQ cos+24(FP), R11
	MOVQ sin+32(FP), R12
	MOVQ SI, DI
neoxStep:
	TAILMASK(BX)
	VMASKMOVPS (R11), Y15, Y4
	VMASKMOVPS (R12), Y15, Y5
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (DI)(R9*1), Y15, Y1
	VMULPS Y4, Y0, Y2
	VFNMADD231PS Y5, Y1, Y2
	VMULPS Y5, Y0, Y3
	VFMADD231PS Y4, Y1, Y3
	VMASKMOVPS Y2, Y15, (DI)
	VMASKMOVPS Y3, Y15, (DI)(R9*1)
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, DI
	SUBQ $8, BX
	JG neoxStep
	LEAQ (SI)(R9*2), SI
	DECQ R8
	JNZ neoxHead
	VZEROUPPER
	RET
