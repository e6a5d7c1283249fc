//go:build !noasm

#include "textflag.h"

// The interleaved Q4_K batched kernels with float scales (q4kr16f.go), for
// up to eight tokens a pass. Where the integer kernels (q4kr16m_amd64.s)
// spend a VPADDD, a two-uop VPMULLD and another VPADDD a token and
// sub-block on the rows' scales, these convert the sub-block's products
// once and fold them in with one FMA by d·sc (built once a sub-block for
// every token), and take the mins with one VPDPWSSD a pair. A line's
// nibbles, split once, feed sixteen VPDPBUSDs. Every token's float
// operations are the same ones in the same order whatever the pass's
// width (eight, four or one), so its results do not depend on its
// neighbours (the matvec_batch contract); the integer sums are exact in
// any order.
//
// Registers: Z13 0x0f bytes; per token t = 0..7 the group's float sums
// Z0+t, a super-block's scaled sum Z16+t, a sub-block's (then the mins')
// integer products Z24+t; Z8, Z9 a line's nibbles, Z10 d·sc of a
// sub-block, Z11 d, Z12 dmin, Z14 a mins pair's words. Token t's
// activations are at TOKt: four base registers, the last four tokens an
// index of 4·xstride (BX) past them.

#define TOK0 (R8)
#define TOK1 (R11)
#define TOK2 (R12)
#define TOK3 (R13)
#define TOK4 (R8)(BX*4)
#define TOK5 (R11)(BX*4)
#define TOK6 (R12)(BX*4)
#define TOK7 (R13)(BX*4)

// F_DOT is one token's two products of line g of sub-block s into a.
#define F_DOT(s, g, x, a) \
	VPDPBUSD.BCST (32*(s)+4*(g))x, Z8, a; \
	VPDPBUSD.BCST (32*(s)+16+4*(g))x, Z9, a

// F_NIBBLES splits line g of sub-block s into Z8 (low) and Z9 (high).
#define F_NIBBLES(s, g) \
	VPSRLW $4, (320+((s)*4+(g))*64)(SI), Z9; \
	VPANDD (320+((s)*4+(g))*64)(SI), Z13, Z8; \
	VPANDD Z13, Z9, Z9

// F_SCALES sets Z10 to d·sc of sub-block s, the rows' float scales.
#define F_SCALES(s) \
	VPMOVZXBD (64+16*(s))(SI), Z10; \
	VCVTDQ2PS Z10, Z10; \
	VMULPS    Z11, Z10, Z10

// F_ACC folds one token's sub-block products a into its scaled sum p.
#define F_ACC(a, p) \
	VCVTDQ2PS   a, a; \
	VFMADD231PS Z10, a, p

// F_MIN is one token's mins pair q into a.
#define F_MIN(q, x, a) \
	VPDPWSSD.BCST (256+4*(q))x, Z14, a

// F_FIN closes one token's super-block: p less dmin times its mins a,
// times dx, into the float sums f.
#define F_FIN(x, a, p, f) \
	VCVTDQ2PS         a, a; \
	VFNMADD231PS      Z12, a, p; \
	VFMADD231PS.BCST  272x, p, f

#define F_ZERO4(a, b, c, d) \
	VPXORD a, a, a; VPXORD b, b, b; VPXORD c, c, c; VPXORD d, d, d

// Eight tokens.
#define F8_LINE(s, g) \
	F_NIBBLES(s, g); \
	F_DOT(s, g, TOK0, Z24); F_DOT(s, g, TOK1, Z25); F_DOT(s, g, TOK2, Z26); F_DOT(s, g, TOK3, Z27); \
	F_DOT(s, g, TOK4, Z28); F_DOT(s, g, TOK5, Z29); F_DOT(s, g, TOK6, Z30); F_DOT(s, g, TOK7, Z31)

#define F8_SUB(s) \
	F_SCALES(s); \
	F_ZERO4(Z24, Z25, Z26, Z27); F_ZERO4(Z28, Z29, Z30, Z31); \
	F8_LINE(s, 0); F8_LINE(s, 1); F8_LINE(s, 2); F8_LINE(s, 3); \
	F_ACC(Z24, Z16); F_ACC(Z25, Z17); F_ACC(Z26, Z18); F_ACC(Z27, Z19); \
	F_ACC(Z28, Z20); F_ACC(Z29, Z21); F_ACC(Z30, Z22); F_ACC(Z31, Z23)

#define F8_MINS(q) \
	VPMOVZXBW (192+32*(q))(SI), Z14; \
	F_MIN(q, TOK0, Z24); F_MIN(q, TOK1, Z25); F_MIN(q, TOK2, Z26); F_MIN(q, TOK3, Z27); \
	F_MIN(q, TOK4, Z28); F_MIN(q, TOK5, Z29); F_MIN(q, TOK6, Z30); F_MIN(q, TOK7, Z31)

#define F8_BLOCK \
	F_ZERO4(Z16, Z17, Z18, Z19); F_ZERO4(Z20, Z21, Z22, Z23); \
	VCVTPH2PS (SI), Z11; \
	F8_SUB(0); F8_SUB(1); F8_SUB(2); F8_SUB(3); \
	F8_SUB(4); F8_SUB(5); F8_SUB(6); F8_SUB(7); \
	F_ZERO4(Z24, Z25, Z26, Z27); F_ZERO4(Z28, Z29, Z30, Z31); \
	F8_MINS(0); F8_MINS(1); F8_MINS(2); F8_MINS(3); \
	VCVTPH2PS 32(SI), Z12; \
	F_FIN(TOK0, Z24, Z16, Z0); F_FIN(TOK1, Z25, Z17, Z1); F_FIN(TOK2, Z26, Z18, Z2); F_FIN(TOK3, Z27, Z19, Z3); \
	F_FIN(TOK4, Z28, Z20, Z4); F_FIN(TOK5, Z29, Z21, Z5); F_FIN(TOK6, Z30, Z22, Z6); F_FIN(TOK7, Z31, Z23, Z7); \
	F_STEP

// Four tokens (TOK0-TOK3).
#define F4_LINE(s, g) \
	F_NIBBLES(s, g); \
	F_DOT(s, g, TOK0, Z24); F_DOT(s, g, TOK1, Z25); F_DOT(s, g, TOK2, Z26); F_DOT(s, g, TOK3, Z27)

#define F4_SUB(s) \
	F_SCALES(s); \
	F_ZERO4(Z24, Z25, Z26, Z27); \
	F4_LINE(s, 0); F4_LINE(s, 1); F4_LINE(s, 2); F4_LINE(s, 3); \
	F_ACC(Z24, Z16); F_ACC(Z25, Z17); F_ACC(Z26, Z18); F_ACC(Z27, Z19)

#define F4_MINS(q) \
	VPMOVZXBW (192+32*(q))(SI), Z14; \
	F_MIN(q, TOK0, Z24); F_MIN(q, TOK1, Z25); F_MIN(q, TOK2, Z26); F_MIN(q, TOK3, Z27)

#define F4_BLOCK \
	F_ZERO4(Z16, Z17, Z18, Z19); \
	VCVTPH2PS (SI), Z11; \
	F4_SUB(0); F4_SUB(1); F4_SUB(2); F4_SUB(3); \
	F4_SUB(4); F4_SUB(5); F4_SUB(6); F4_SUB(7); \
	F_ZERO4(Z24, Z25, Z26, Z27); \
	F4_MINS(0); F4_MINS(1); F4_MINS(2); F4_MINS(3); \
	VCVTPH2PS 32(SI), Z12; \
	F_FIN(TOK0, Z24, Z16, Z0); F_FIN(TOK1, Z25, Z17, Z1); F_FIN(TOK2, Z26, Z18, Z2); F_FIN(TOK3, Z27, Z19, Z3); \
	F_STEP

// One token: a sub-block's low and high products in two chains (Z24,
// Z28), added before the conversion: the same integer as one chain.
#define F1_LINE(s, g) \
	F_NIBBLES(s, g); \
	VPDPBUSD.BCST (32*(s)+4*(g))TOK0, Z8, Z24; \
	VPDPBUSD.BCST (32*(s)+16+4*(g))TOK0, Z9, Z28

#define F1_SUB(s) \
	F_SCALES(s); \
	VPXORD Z24, Z24, Z24; VPXORD Z28, Z28, Z28; \
	F1_LINE(s, 0); F1_LINE(s, 1); F1_LINE(s, 2); F1_LINE(s, 3); \
	VPADDD Z28, Z24, Z24; \
	F_ACC(Z24, Z16)

#define F1_MINS(q) \
	VPMOVZXBW (192+32*(q))(SI), Z14; \
	F_MIN(q, TOK0, Z24)

#define F1_BLOCK \
	VPXORD Z16, Z16, Z16; \
	VCVTPH2PS (SI), Z11; \
	F1_SUB(0); F1_SUB(1); F1_SUB(2); F1_SUB(3); \
	F1_SUB(4); F1_SUB(5); F1_SUB(6); F1_SUB(7); \
	VPXORD Z24, Z24, Z24; \
	F1_MINS(0); F1_MINS(1); F1_MINS(2); F1_MINS(3); \
	VCVTPH2PS 32(SI), Z12; \
	F_FIN(TOK0, Z24, Z16, Z0); \
	F_STEP

// F_STEP moves SI and the token bases to the next super-block.
#define F_STEP \
	ADDQ $2368, SI; \
	ADDQ $288, R8; ADDQ $288, R11; ADDQ $288, R12; ADDQ $288, R13

// F_STORE stores a token's 16 sums (register f) at R8, then steps R8 to
// the next token's (ldd floats on).
#define F_STORE(f) \
	VMOVUPS f, (R8); ADDQ AX, R8

#define F8_ZERO F_ZERO4(Z0, Z1, Z2, Z3); F_ZERO4(Z4, Z5, Z6, Z7)
#define F4_ZERO F_ZERO4(Z0, Z1, Z2, Z3)
#define F1_ZERO VPXORD Z0, Z0, Z0
#define F8_STORE F4_STORE; F_STORE(Z4); F_STORE(Z5); F_STORE(Z6); F_STORE(Z7)
#define F4_STORE F_STORE(Z0); F_STORE(Z1); F_STORE(Z2); F_STORE(Z3)
#define F1_STORE F_STORE(Z0)

// F_TEXT is a kernel's text (q4kr16F8's arguments): body (one super-block
// of a group for its tokens) nb times per group of 16 rows, then store
// (the tokens' sums, from R8 = dst of the group).
#define F_TEXT(body, zero, store) \
	MOVQ w+0(FP), SI; MOVQ x+8(FP), DI; MOVQ xstride+16(FP), BX; \
	MOVQ dst+24(FP), DX; MOVQ ldd+32(FP), AX; SHLQ $2, AX; \
	MOVQ nb+40(FP), CX; MOVQ groups+48(FP), R9; \
	MOVL $0x0f0f0f0f, R10; VPBROADCASTD R10, Z13; \
	TESTQ R9, R9; JZ done; \
	TESTQ CX, CX; JZ done; \
group: \
	zero; \
	MOVQ DI, R8; LEAQ (DI)(BX*1), R11; LEAQ (DI)(BX*2), R12; LEAQ (R12)(BX*1), R13; \
	MOVQ CX, R10; \
block: \
	body; \
	DECQ R10; JNZ block; \
	MOVQ DX, R8; \
	store; \
	ADDQ $64, DX; \
	DECQ R9; JNZ group; \
done: \
	VZEROUPPER; \
	RET

// func q4kr16F8(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
// Eight tokens' activations at x, xstride bytes apart (each laid out by
// PrepareQ4KR16); token t's 16 sums of each group at dst + t·ldd floats.
TEXT ·q4kr16F8(SB), NOSPLIT, $0-56
	F_TEXT(F8_BLOCK, F8_ZERO, F8_STORE)

// func q4kr16F4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
TEXT ·q4kr16F4(SB), NOSPLIT, $0-56
	F_TEXT(F4_BLOCK, F4_ZERO, F4_STORE)

// func q4kr16F1(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
TEXT ·q4kr16F1(SB), NOSPLIT, $0-56
	F_TEXT(F1_BLOCK, F1_ZERO, F1_STORE)

// The Q6_K twins (q6kr16F8, F4, F1) over the interleaved Q6_K layout
// (q6kr16.go), activations laid out by PrepareQ6KR16: each of a
// sub-block's four k-quads of 6-bit quants is built once into Z8 (from its
// nibbles and top bits, Z9 a temporary) for one VPDPBUSD a token; a
// token's sub-block sum, less 32 × its activations' sum, is converted and
// folded in with one FMA by d·sc (signed). Z13 holds 0x0f bytes, Z14 0x30
// bytes; the other registers as above.

#define S6_N0(s) (288+192*(s))(SI)
#define S6_N1(s) (288+192*(s)+64)(SI)
#define S6_TOP(s) (288+192*(s)+128)(SI)

// S6_KQj builds k-quad j (weights 16s+4j+i) of sub-block s into Z8.
#define S6_KQ0(s) \
	VPANDD S6_N0(s), Z13, Z8; VPSLLW $4, S6_TOP(s), Z9; VPTERNLOGD $0xf8, Z14, Z9, Z8
#define S6_KQ1(s) \
	VPSRLW $4, S6_N0(s), Z8; VPANDD Z13, Z8, Z8; VPSLLW $2, S6_TOP(s), Z9; VPTERNLOGD $0xf8, Z14, Z9, Z8
#define S6_KQ2(s) \
	VPANDD S6_N1(s), Z13, Z8; VPTERNLOGD $0xf8, S6_TOP(s), Z14, Z8
#define S6_KQ3(s) \
	VPSRLW $4, S6_N1(s), Z8; VPANDD Z13, Z8, Z8; VPSRLW $2, S6_TOP(s), Z9; VPTERNLOGD $0xf8, Z14, Z9, Z8

#define S6_DOT(s, j, x, a) VPDPBUSD.BCST (16*(s)+4*(j))x, Z8, a

#define S6_DOTS8(s, j) \
	S6_DOTS4(s, j); \
	S6_DOT(s, j, TOK4, Z28); S6_DOT(s, j, TOK5, Z29); S6_DOT(s, j, TOK6, Z30); S6_DOT(s, j, TOK7, Z31)
#define S6_DOTS4(s, j) \
	S6_DOT(s, j, TOK0, Z24); S6_DOT(s, j, TOK1, Z25); S6_DOT(s, j, TOK2, Z26); S6_DOT(s, j, TOK3, Z27)
#define S6_DOTS1(s, j) S6_DOT(s, j, TOK0, Z24)

// S6_ACC folds one token's sub-block s (products a) into its sum p.
#define S6_ACC(s, x, a, p) \
	VPSUBD.BCST (256+4*(s))x, a, a; \
	VCVTDQ2PS   a, a; \
	VFMADD231PS Z10, a, p

#define S6_ACCS8(s) \
	S6_ACCS4(s); \
	S6_ACC(s, TOK4, Z28, Z20); S6_ACC(s, TOK5, Z29, Z21); S6_ACC(s, TOK6, Z30, Z22); S6_ACC(s, TOK7, Z31, Z23)
#define S6_ACCS4(s) \
	S6_ACC(s, TOK0, Z24, Z16); S6_ACC(s, TOK1, Z25, Z17); S6_ACC(s, TOK2, Z26, Z18); S6_ACC(s, TOK3, Z27, Z19)
#define S6_ACCS1(s) S6_ACC(s, TOK0, Z24, Z16)

#define S6_ZA8 F_ZERO4(Z24, Z25, Z26, Z27); F_ZERO4(Z28, Z29, Z30, Z31)
#define S6_ZA4 F_ZERO4(Z24, Z25, Z26, Z27)
#define S6_ZA1 VPXORD Z24, Z24, Z24
#define S6_ZP8 F_ZERO4(Z16, Z17, Z18, Z19); F_ZERO4(Z20, Z21, Z22, Z23)
#define S6_ZP4 F_ZERO4(Z16, Z17, Z18, Z19)
#define S6_ZP1 VPXORD Z16, Z16, Z16

// S6_SUB is sub-block s for a set of tokens (its zeroing, products and
// folds).
#define S6_SUB(s, za, dots, accs) \
	VPMOVSXBD (32+16*(s))(SI), Z10; VCVTDQ2PS Z10, Z10; VMULPS Z11, Z10, Z10; \
	za; \
	S6_KQ0(s); dots(s, 0); S6_KQ1(s); dots(s, 1); S6_KQ2(s); dots(s, 2); S6_KQ3(s); dots(s, 3); \
	accs(s)

#define S6_FIN(x, p, f) VFMADD231PS.BCST 320x, p, f
#define S6_FINS8 S6_FINS4; S6_FIN(TOK4, Z20, Z4); S6_FIN(TOK5, Z21, Z5); S6_FIN(TOK6, Z22, Z6); S6_FIN(TOK7, Z23, Z7)
#define S6_FINS4 S6_FIN(TOK0, Z16, Z0); S6_FIN(TOK1, Z17, Z1); S6_FIN(TOK2, Z18, Z2); S6_FIN(TOK3, Z19, Z3)
#define S6_FINS1 S6_FIN(TOK0, Z16, Z0)

// S6_BLOCK is one super-block of the group at SI for a set of tokens.
#define S6_BLOCK(zp, za, dots, accs, fins) \
	zp; \
	VCVTPH2PS (SI), Z11; \
	S6_SUB(0, za, dots, accs); S6_SUB(1, za, dots, accs); S6_SUB(2, za, dots, accs); S6_SUB(3, za, dots, accs); \
	S6_SUB(4, za, dots, accs); S6_SUB(5, za, dots, accs); S6_SUB(6, za, dots, accs); S6_SUB(7, za, dots, accs); \
	S6_SUB(8, za, dots, accs); S6_SUB(9, za, dots, accs); S6_SUB(10, za, dots, accs); S6_SUB(11, za, dots, accs); \
	S6_SUB(12, za, dots, accs); S6_SUB(13, za, dots, accs); S6_SUB(14, za, dots, accs); S6_SUB(15, za, dots, accs); \
	fins; \
	ADDQ $3360, SI; \
	ADDQ $336, R8; ADDQ $336, R11; ADDQ $336, R12; ADDQ $336, R13

#define S6_BLOCK8 S6_BLOCK(S6_ZP8, S6_ZA8, S6_DOTS8, S6_ACCS8, S6_FINS8)
#define S6_BLOCK4 S6_BLOCK(S6_ZP4, S6_ZA4, S6_DOTS4, S6_ACCS4, S6_FINS4)
#define S6_BLOCK1 S6_BLOCK(S6_ZP1, S6_ZA1, S6_DOTS1, S6_ACCS1, S6_FINS1)

#define S6_CONSTS MOVL $0x30303030, R10; VPBROADCASTD R10, Z14

// func q6kr16F8(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
TEXT ·q6kr16F8(SB), NOSPLIT, $0-56
	S6_CONSTS
	F_TEXT(S6_BLOCK8, F8_ZERO, F8_STORE)

// func q6kr16F4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
TEXT ·q6kr16F4(SB), NOSPLIT, $0-56
	S6_CONSTS
	F_TEXT(S6_BLOCK4, F4_ZERO, F4_STORE)

// func q6kr16F1(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)
TEXT ·q6kr16F1(SB), NOSPLIT, $0-56
	S6_CONSTS
	F_TEXT(S6_BLOCK1, F1_ZERO, F1_STORE)
