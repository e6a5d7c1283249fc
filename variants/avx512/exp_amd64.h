// Cephes' expf for the assembly files of this package that include it
// (each gets its own copy of the constant table: <> symbols are file-local).
// The generated ops_amd64.s does not include it: variants/_gen/ops.go
// (expAVX512) writes the same sequence there; change both together.
//
// n = round(x·log2 e), r = x - n·ln2 (in two parts), a
// degree-5 polynomial, then VSCALEFPS multiplies by 2^n, which over- and
// underflows to +Inf and 0 correctly. x is clamped to [-104, 100] first so
// the reduction stays exact. Relative error is about 2 float32 ulps.

DATA expConst<>+0(SB)/4, $0x3fb8aa3b // log2e 1.4426950408889634
DATA expConst<>+4(SB)/4, $0x3f318000 // c1 0.693359375
DATA expConst<>+8(SB)/4, $0xb95e8083 // c2 -0.00021219444
DATA expConst<>+12(SB)/4, $0x39506967 // p0 0.000198756915
DATA expConst<>+16(SB)/4, $0x3ab743ce // p1 0.0013981999507
DATA expConst<>+20(SB)/4, $0x3c088908 // p2 0.0083334519073
DATA expConst<>+24(SB)/4, $0x3d2aa9c1 // p3 0.041665795894
DATA expConst<>+28(SB)/4, $0x3e2aaaaa // p4 0.16666665459
DATA expConst<>+32(SB)/4, $0x3f000000 // p5 0.50000001201
DATA expConst<>+36(SB)/4, $0x3f800000 // one 1.0
DATA expConst<>+40(SB)/4, $0x42c80000 // hi 100.0
DATA expConst<>+44(SB)/4, $0xc2d00000 // lo -104.0
GLOBL expConst<>(SB), RODATA|NOPTR, $48

#define EXP_CONSTS \
	VBROADCASTSS expConst<>+0(SB), Z31; \
	VBROADCASTSS expConst<>+4(SB), Z30; \
	VBROADCASTSS expConst<>+8(SB), Z29; \
	VBROADCASTSS expConst<>+12(SB), Z28; \
	VBROADCASTSS expConst<>+16(SB), Z27; \
	VBROADCASTSS expConst<>+20(SB), Z26; \
	VBROADCASTSS expConst<>+24(SB), Z25; \
	VBROADCASTSS expConst<>+28(SB), Z24; \
	VBROADCASTSS expConst<>+32(SB), Z23; \
	VBROADCASTSS expConst<>+36(SB), Z22; \
	VBROADCASTSS expConst<>+40(SB), Z21; \
	VBROADCASTSS expConst<>+44(SB), Z20

// Z0 = exp(Z0); clobbers Z1-Z3.
#define EXP \
	VMINPS Z21, Z0, Z0; \
	VMAXPS Z20, Z0, Z0; \
	VMULPS Z31, Z0, Z1; \
	VRNDSCALEPS $0, Z1, Z1; \
	VFNMADD231PS Z30, Z1, Z0; \
	VFNMADD231PS Z29, Z1, Z0; \
	VMOVAPS Z28, Z2; \
	VFMADD213PS Z27, Z0, Z2; \
	VFMADD213PS Z26, Z0, Z2; \
	VFMADD213PS Z25, Z0, Z2; \
	VFMADD213PS Z24, Z0, Z2; \
	VFMADD213PS Z23, Z0, Z2; \
	VMULPS Z0, Z0, Z3; \
	VFMADD213PS Z0, Z3, Z2; \
	VADDPS Z22, Z2, Z2; \
	VSCALEFPS Z1, Z2, Z0

// Softmax building blocks over a row at SI with BX values left (16 at a
// time, the tail under K1; MASK16 from lanes_amd64.h):
// SOFTMAX_MAX_STEP folds 16 values into Z9 (Z8 = -Inf fills the masked
// lanes), SOFTMAX_EXP_STEP replaces them by exp(x - Z9), leaving them in Z0
// with the masked lanes zero. Both clobber AX, CX; the second Z0-Z3.
#define SOFTMAX_MAX_STEP \
	MASK16(BX); \
	VMOVAPS Z8, Z0; \
	VMOVUPS (SI), K1, Z0; \
	VMAXPS Z0, Z9, Z9

#define SOFTMAX_EXP_STEP \
	MASK16(BX); \
	VMOVUPS.Z (SI), K1, Z0; \
	VSUBPS Z9, Z0, Z0; \
	EXP; \
	VMOVAPS.Z Z0, K1, Z0; \
	VMOVUPS Z0, K1, (SI)
