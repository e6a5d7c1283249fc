//go:build !noasm

#include "textflag.h"

// The interleaved Q4_K decode kernel (q4kr16.go): 16 rows a vector lane
// each, so a sub-block is four 64-byte loads, each split into its low and
// high nibbles for two VPDPBUSDs against broadcast activation dwords, then
// one VPMULLD by the rows' scales; no horizontal sums. Z31 holds 0x0f
// bytes; Z0 the group's 16 float sums; Z1, Z2 a super-block's scaled
// products and mins.

// R16_LINE is group g of sub-block s: Z3 += low nibbles · x[32s+4g:],
// Z4 += high nibbles · x[32s+16+4g:].
#define R16_LINE(s, g) \
	VMOVDQU64 (320+((s)*4+(g))*64)(SI), Z8; \
	VPSRLW    $4, Z8, Z9; \
	VPANDD    Z31, Z8, Z8; \
	VPANDD    Z31, Z9, Z9; \
	VPDPBUSD.BCST (32*(s)+4*(g))(R8), Z8, Z3; \
	VPDPBUSD.BCST (32*(s)+16+4*(g))(R8), Z9, Z4

// R16_LINE_PF is R16_LINE with a PREFETCHT0 of the line dist bytes ahead
// (R11 = SI + dist).
#define R16_LINE_PF(s, g) \
	R16_LINE(s, g); \
	PREFETCHT0 (320+((s)*4+(g))*64)(R11)

// R16_SUB is sub-block s through line (R16_LINE or R16_LINE_PF): its 32
// products a row, times the rows' scales, into Z1.
#define R16_SUB(line, s) \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	line(s, 0); line(s, 1); line(s, 2); line(s, 3); \
	VPADDD    Z4, Z3, Z3; \
	VPMOVZXBD (64+16*(s))(SI), Z10; \
	VPMULLD   Z10, Z3, Z3; \
	VPADDD    Z3, Z1, Z1

// R16_MINS is mins pair p: Z2 += m[2p]·sum[2p] + m[2p+1]·sum[2p+1].
#define R16_MINS(p) \
	VPMOVZXBW    (192+32*(p))(SI), Z11; \
	VPBROADCASTD (256+4*(p))(R8), Z12; \
	VPMADDWD     Z12, Z11, Z11; \
	VPADDD       Z11, Z2, Z2

// R16_SCALE adds the super-block to the float sums Z0: d·dx times the
// scaled products, less dmin·dx times the mins.
#define R16_SCALE \
	VCVTDQ2PS         Z1, Z1; \
	VCVTDQ2PS         Z2, Z2; \
	VCVTPH2PS         (SI), Z13; \
	VCVTPH2PS         32(SI), Z14; \
	VMULPS.BCST       272(R8), Z13, Z13; \
	VMULPS.BCST       272(R8), Z14, Z14; \
	VFMADD231PS       Z13, Z1, Z0; \
	VFNMADD231PS      Z14, Z2, Z0

// R16_BLOCK is one super-block of the group at SI, activations at R8,
// through line; SI and R8 step to the next.
#define R16_BLOCK(line) \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	R16_SUB(line, 0); R16_SUB(line, 1); R16_SUB(line, 2); R16_SUB(line, 3); \
	R16_SUB(line, 4); R16_SUB(line, 5); R16_SUB(line, 6); R16_SUB(line, 7); \
	R16_MINS(0); R16_MINS(1); R16_MINS(2); R16_MINS(3); \
	R16_SCALE; \
	ADDQ $2368, SI; \
	ADDQ $288, R8

// R16_PROLOGUE loads the arguments w, x, dst, nb, groups into SI, DI, DX,
// CX, R9 and Z31 with 0x0f bytes, and returns when there is nothing to do.
#define R16_PROLOGUE \
	MOVQ w+0(FP), SI; MOVQ x+8(FP), DI; MOVQ dst+16(FP), DX; \
	MOVQ nb+24(FP), CX; MOVQ groups+32(FP), R9; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z31; \
	TESTQ R9, R9; JZ done; \
	TESTQ CX, CX; JZ done

// func q4kr16Dot(w, x *byte, dst *float32, nb, groups int)
TEXT ·q4kr16Dot(SB), NOSPLIT, $0-40
	R16_PROLOGUE
group:
	VPXORD Z0, Z0, Z0
	MOVQ   DI, R8
	MOVQ   CX, R10
block:
	R16_BLOCK(R16_LINE)
	DECQ R10
	JNZ  block
	VMOVUPS Z0, (DX)
	ADDQ    $64, DX
	DECQ    R9
	JNZ     group
done:
	VZEROUPPER
	RET

// func q4kr16DotPf(w, x *byte, dst *float32, nb, groups, dist int)
// q4kr16Dot with every line of the weights prefetched (PREFETCHT0) dist
// bytes ahead.
TEXT ·q4kr16DotPf(SB), NOSPLIT, $0-48
	R16_PROLOGUE
	MOVQ dist+40(FP), R11
	ADDQ SI, R11
pgroup:
	VPXORD Z0, Z0, Z0
	MOVQ   DI, R8
	MOVQ   CX, R10
pblock:
	PREFETCHT0 0(R11)
	PREFETCHT0 64(R11)
	PREFETCHT0 128(R11)
	PREFETCHT0 192(R11)
	PREFETCHT0 256(R11)
	R16_BLOCK(R16_LINE_PF)
	ADDQ $2368, R11
	DECQ R10
	JNZ  pblock
	VMOVUPS Z0, (DX)
	ADDQ    $64, DX
	DECQ    R9
	JNZ     pgroup
done:
	VZEROUPPER
	RET
