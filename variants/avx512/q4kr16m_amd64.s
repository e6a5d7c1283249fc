//go:build !noasm

#include "textflag.h"
#include "r16_amd64.h"

// The interleaved Q4_K kernel for four tokens at once (q4kr16m.go): each
// weight line is loaded and split into its nibbles once and feeds eight
// VPDPBUSDs, two a token, where the single-token kernel (q4kr16_amd64.s)
// feeds two. A token's sums are the single-token kernel's, operation for
// operation, so its results are the same bits.
//
// Registers: Z31 0x0f bytes; per token t = 0..3 the group's float sums
// Z0+t, a super-block's scaled products Z4+t and mins Z16+t, a sub-block's
// low- and high-nibble products Z20+t and Z24+t; Z8, Z9 a line's nibbles,
// Z10 the rows' scales, Z11-Z14 temporaries. The tokens' activations are
// at R8, R11, R12 and R13.

// M4_DOT is token t's two products of a line: activation pointer x,
// low/high accumulators lo, hi.
#define M4_DOT(s, g, x, lo, hi) \
	VPDPBUSD.BCST (32*(s)+4*(g))(x), Z8, lo; \
	VPDPBUSD.BCST (32*(s)+16+4*(g))(x), Z9, hi

// M4_LINE is group g of sub-block s for the four tokens.
#define M4_LINE(s, g) \
	VMOVDQU64 (320+((s)*4+(g))*64)(SI), Z8; \
	VPSRLW    $4, Z8, Z9; \
	VPANDD    Z31, Z8, Z8; \
	VPANDD    Z31, Z9, Z9; \
	M4_DOT(s, g, R8, Z20, Z24); \
	M4_DOT(s, g, R11, Z21, Z25); \
	M4_DOT(s, g, R12, Z22, Z26); \
	M4_DOT(s, g, R13, Z23, Z27)

// M4_SUBSUM is one token's sub-block: its products times the rows'
// scales (Z10) into its super-block's sum p.
#define M4_SUBSUM(lo, hi, p) \
	VPADDD  hi, lo, lo; \
	VPMULLD Z10, lo, lo; \
	VPADDD  lo, p, p

// M4_SUB is sub-block s for the four tokens.
#define M4_SUB(s) \
	VPXORD Z20, Z20, Z20; VPXORD Z21, Z21, Z21; VPXORD Z22, Z22, Z22; VPXORD Z23, Z23, Z23; \
	VPXORD Z24, Z24, Z24; VPXORD Z25, Z25, Z25; VPXORD Z26, Z26, Z26; VPXORD Z27, Z27, Z27; \
	M4_LINE(s, 0); M4_LINE(s, 1); M4_LINE(s, 2); M4_LINE(s, 3); \
	VPMOVZXBD (64+16*(s))(SI), Z10; \
	M4_SUBSUM(Z20, Z24, Z4); \
	M4_SUBSUM(Z21, Z25, Z5); \
	M4_SUBSUM(Z22, Z26, Z6); \
	M4_SUBSUM(Z23, Z27, Z7)

// M4_MIN is one token's mins pair p (mins words in Z11) into m.
#define M4_MIN(p, x, m) \
	VPBROADCASTD (256+4*(p))(x), Z12; \
	VPMADDWD     Z12, Z11, Z12; \
	VPADDD       Z12, m, m

#define M4_MINS(p) \
	VPMOVZXBW (192+32*(p))(SI), Z11; \
	M4_MIN(p, R8, Z16); M4_MIN(p, R11, Z17); M4_MIN(p, R12, Z18); M4_MIN(p, R13, Z19)

// M4_SCALE adds one token's super-block to its float sums f: d·dx times
// the scaled products p, less dmin·dx times the mins m (d in Z13, dmin in
// Z14), as R16_SCALE.
#define M4_SCALE(x, p, m, f) \
	VCVTDQ2PS    p, p; \
	VCVTDQ2PS    m, m; \
	VMULPS.BCST  272(x), Z13, Z12; \
	VMULPS.BCST  272(x), Z14, Z11; \
	VFMADD231PS  Z12, p, f; \
	VFNMADD231PS Z11, m, f

// M4_BLOCK is one super-block of the group at SI for the four tokens;
// SI and the activation pointers step to the next.
#define M4_BLOCK \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7; \
	VPXORD Z16, Z16, Z16; VPXORD Z17, Z17, Z17; VPXORD Z18, Z18, Z18; VPXORD Z19, Z19, Z19; \
	M4_SUB(0); M4_SUB(1); M4_SUB(2); M4_SUB(3); \
	M4_SUB(4); M4_SUB(5); M4_SUB(6); M4_SUB(7); \
	M4_MINS(0); M4_MINS(1); M4_MINS(2); M4_MINS(3); \
	VCVTPH2PS (SI), Z13; \
	VCVTPH2PS 32(SI), Z14; \
	M4_SCALE(R8, Z4, Z16, Z0); \
	M4_SCALE(R11, Z5, Z17, Z1); \
	M4_SCALE(R12, Z6, Z18, Z2); \
	M4_SCALE(R13, Z7, Z19, Z3); \
	ADDQ $2368, SI; \
	ADDQ $288, R8; ADDQ $288, R11; ADDQ $288, R12; ADDQ $288, R13

// M4_TEXT is a four-token kernel's text (q4kr16DotM4's arguments): the
// constants consts, then body (one super-block of a group for the four
// tokens, stepping SI and the activation pointers) nb times per group of
// 16 rows, each token's 16 sums stored ldd floats apart.
#define M4_TEXT(consts, body) \
	MOVQ w+0(FP), SI; MOVQ x+8(FP), DI; MOVQ xstride+16(FP), BX; \
	MOVQ dst+24(FP), DX; MOVQ ldd+32(FP), AX; SHLQ $2, AX; \
	MOVQ nb+40(FP), CX; MOVQ groups+48(FP), R9; \
	consts; \
	TESTQ R9, R9; JZ done; \
	TESTQ CX, CX; JZ done; \
group: \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3; \
	MOVQ DI, R8; LEAQ (DI)(BX*1), R11; LEAQ (DI)(BX*2), R12; LEAQ (R12)(BX*1), R13; \
	MOVQ CX, R10; \
block: \
	body; \
	DECQ R10; JNZ block; \
	MOVQ DX, R8; VMOVUPS Z0, (R8); ADDQ AX, R8; VMOVUPS Z1, (R8); \
	ADDQ AX, R8; VMOVUPS Z2, (R8); ADDQ AX, R8; VMOVUPS Z3, (R8); \
	ADDQ $64, DX; \
	DECQ R9; JNZ group; \
done: \
	VZEROUPPER; \
	RET

#define M4_CONSTS MOVL $0x0f0f0f0f, R10; VPBROADCASTD R10, Z31
#define M6_CONSTS M4_CONSTS; MOVL $0x30303030, R10; VPBROADCASTD R10, Z30

// func q4kr16DotM4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
// Four tokens' activations at x, xstride bytes apart (each laid out by
// PrepareQ4KR16); token t's 16 sums of each group at dst + t·ldd floats.
TEXT ·q4kr16DotM4(SB), NOSPLIT, $0-56
	M4_TEXT(M4_CONSTS, M4_BLOCK)

// The Q6_K twin (q6kr16Dot's sub-block, four tokens): a sub-block's four
// weight vectors are built once from its two nibble vectors and its top
// bits and feed sixteen VPDPBUSDs. Registers as above, Z30 0x30 bytes, Z14
// the rows' signed scales, F = Z0..Z3, super-block sums P = Z4..Z7,
// sub-block sums Z20..Z23.

// M6_TOKEN is one token's sub-block s (activations at x): its four
// products, less 32 × its sum, times the scales, into p.
#define M6_TOKEN(s, x, a, p) \
	VPXORD a, a, a; \
	VPDPBUSD.BCST (16*(s))(x), Z8, a; \
	VPDPBUSD.BCST (16*(s)+4)(x), Z11, a; \
	VPDPBUSD.BCST (16*(s)+8)(x), Z9, a; \
	VPDPBUSD.BCST (16*(s)+12)(x), Z12, a; \
	VPSUBD.BCST (256+4*(s))(x), a, a; \
	VPMULLD Z14, a, a; \
	VPADDD a, p, p

#define M6_SUB(s) \
	VMOVDQU64 (288+192*(s))(SI), Z8; \
	VMOVDQU64 (288+192*(s)+64)(SI), Z9; \
	VMOVDQU64 (288+192*(s)+128)(SI), Z10; \
	R6_BUILD; \
	VPMOVSXBD (32+16*(s))(SI), Z14; \
	M6_TOKEN(s, R8, Z20, Z4); \
	M6_TOKEN(s, R11, Z21, Z5); \
	M6_TOKEN(s, R12, Z22, Z6); \
	M6_TOKEN(s, R13, Z23, Z7)

// M6_SCALE adds one token's super-block to f: d·dx (d in Z13) times p.
#define M6_SCALE(x, p, f) \
	VCVTDQ2PS   p, p; \
	VMULPS.BCST 320(x), Z13, Z16; \
	VFMADD231PS Z16, p, f

#define M6_BLOCK \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7; \
	M6_SUB(0); M6_SUB(1); M6_SUB(2); M6_SUB(3); M6_SUB(4); M6_SUB(5); M6_SUB(6); M6_SUB(7); \
	M6_SUB(8); M6_SUB(9); M6_SUB(10); M6_SUB(11); M6_SUB(12); M6_SUB(13); M6_SUB(14); M6_SUB(15); \
	VCVTPH2PS (SI), Z13; \
	M6_SCALE(R8, Z4, Z0); \
	M6_SCALE(R11, Z5, Z1); \
	M6_SCALE(R12, Z6, Z2); \
	M6_SCALE(R13, Z7, Z3); \
	ADDQ $3360, SI; \
	ADDQ $336, R8; ADDQ $336, R11; ADDQ $336, R12; ADDQ $336, R13

// func q6kr16DotM4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
// q4kr16DotM4 for the interleaved Q6_K layout (activations laid out by
// PrepareQ6KR16).
TEXT ·q6kr16DotM4(SB), NOSPLIT, $0-56
	M4_TEXT(M6_CONSTS, M6_BLOCK)
