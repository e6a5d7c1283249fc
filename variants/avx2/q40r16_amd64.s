//go:build !noasm

#include "textflag.h"

// The interleaved Q4_0 decode kernel (q40r16.go): per block of 32 values
// and group of 16 rows, four lines, each two 256-bit halves (rows 0-7,
// 8-15) split into nibbles and multiplied (VPMADDUBSW, the nibbles q
// unsigned) by the broadcast activation dwords of its low and high
// values, the eight products of a half added in words (≤ 8 × 3840, exact),
// widened by VPMADDWD by ones, less 8·Σx (q = w + 8), times d_w·d_x into
// the rows' float sums. Y15 holds 0x0f bytes, Y0 and Y1 the float sums.

// Q4R_PART is half off of line j: its low nibbles times Y8, its high ones
// times Y9, added into a.
#define Q4R_PART(j, off, a, b) \
	VPAND      (32+64*(j)+off)(SI), Y15, a; \
	VPANDN     (32+64*(j)+off)(SI), Y15, b; \
	VPSRLW     $4, b, b; \
	VPMADDUBSW Y8, a, a; \
	VPMADDUBSW Y9, b, b; \
	VPADDW     b, a, a

#define Q4R_BCAST(j) \
	VPBROADCASTD (4*(j))(R8), Y8; \
	VPBROADCASTD (16+4*(j))(R8), Y9

// Q4R_LINE adds line j of both halves into the word sums Y2 (rows 0-7)
// and Y3; Q4R_FIRST starts them.
#define Q4R_FIRST \
	Q4R_BCAST(0); \
	Q4R_PART(0, 0, Y2, Y10); \
	Q4R_PART(0, 32, Y3, Y11)

#define Q4R_LINE(j) \
	Q4R_BCAST(j); \
	Q4R_PART(j, 0, Y4, Y10); \
	Q4R_PART(j, 32, Y5, Y11); \
	VPADDW Y4, Y2, Y2; \
	VPADDW Y5, Y3, Y3

// Q4R_BLOCK is one block of the group at SI (activations at R8) into Y0,
// Y1; SI, R11 and R8 step to the next. PFW prefetches (see below).
#define Q4R_BLOCK(pf) \
	pf; \
	Q4R_FIRST; Q4R_LINE(1); Q4R_LINE(2); Q4R_LINE(3); \
	VPMADDWD     Y14, Y2, Y2; \
	VPMADDWD     Y14, Y3, Y3; \
	VPBROADCASTD 32(R8), Y6; \
	VPSUBD       Y6, Y2, Y2; \
	VPSUBD       Y6, Y3, Y3; \
	VCVTDQ2PS    Y2, Y2; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS 36(R8), Y7; \
	VCVTPH2PS    (SI), Y4; \
	VCVTPH2PS    16(SI), Y5; \
	VMULPS       Y7, Y4, Y4; \
	VMULPS       Y7, Y5, Y5; \
	VFMADD231PS  Y4, Y2, Y0; \
	VFMADD231PS  Y5, Y3, Y1; \
	ADDQ $288, SI; ADDQ $288, R11; \
	ADDQ $40, R8

#define Q4R_NOPF
#define Q4R_PF \
	PFW 0(R11); PFW 64(R11); PFW 128(R11); PFW 192(R11); PFW 256(R11)

// Q4R_GROUPS runs block nb (CX) times for each of the groups (R9) of 16
// rows, storing each group's 16 sums at DX onwards.
#define Q4R_GROUPS(grp, blk, block) \
grp: \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	MOVQ   DI, R8; \
	MOVQ   CX, R10; \
blk: \
	block; \
	DECQ R10; \
	JNZ  blk; \
	VMOVUPS Y0, (DX); \
	VMOVUPS Y1, 32(DX); \
	ADDQ    $64, DX; \
	DECQ    R9; \
	JNZ     grp

// Q4R_FUNC: w, x, dst, nb, groups, dist in SI, DI, DX, CX, R9 and R11 =
// SI + dist; Y15 0x0f bytes, Y14 words of 1; prefetching when dist > 0.
#define Q4R_FUNC \
	MOVQ w+0(FP), SI; MOVQ x+8(FP), DI; MOVQ dst+16(FP), DX; \
	MOVQ nb+24(FP), CX; MOVQ groups+32(FP), R9; \
	MOVQ dist+40(FP), R11; \
	MOVL $0x0f0f0f0f, AX; VMOVD AX, X15; VPBROADCASTD X15, Y15; \
	MOVL $0x00010001, AX; VMOVD AX, X14; VPBROADCASTD X14, Y14; \
	TESTQ R9, R9; JZ done; \
	TESTQ CX, CX; JZ done; \
	TESTQ R11, R11; JNZ pf; \
	Q4R_GROUPS(group, block, Q4R_BLOCK(Q4R_NOPF)); \
	JMP done; \
pf: \
	ADDQ SI, R11; \
	Q4R_GROUPS(pgroup, pblock, Q4R_BLOCK(Q4R_PF)); \
done: \
	VZEROUPPER; \
	RET

#define PFW PREFETCHT0

// func q40r16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q40r16DotAVX2(SB), NOSPLIT, $0-48
	Q4R_FUNC

#undef PFW
#define PFW PREFETCHNTA

// func q40r16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)
// q40r16DotAVX2 prefetching with PREFETCHNTA.
TEXT ·q40r16DotAVX2N(SB), NOSPLIT, $0-48
	Q4R_FUNC

#undef PFW
