//go:build !noasm

#include "textflag.h"
#include "../avx512/r16_amd64.h"
#include "r16pack_amd64.h"

// The sub-block-sum panel (sub.go) from the interleaved Q4_K layout
// (variants/avx512's q4kr16.go): each 64-byte line of a group's quants is
// already 16 rows × 4 weights, its low nibbles one k-quad of the panel
// and its high nibbles another; the scales, mins, d and dmin widen lane
// for lane. A straight stream where the stored layout's packer gathers
// 16 rows.

// R16P_LINE is line g of sub-block s: its low nibbles to k-quad 8s+g, its
// high ones to k-quad 8s+4+g.
#define R16P_LINE(s, g) \
	VMOVDQU64 (320+((s)*4+(g))*64)(SI), Z0; \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z31, Z0, Z0; \
	VPANDD    Z31, Z1, Z1; \
	VMOVDQU64 Z0, ((8*(s)+(g))*64)(DI); \
	VMOVDQU64 Z1, ((8*(s)+4+(g))*64)(DI)

#define R16P_SUB(s) \
	R16P_LINE(s, 0); R16P_LINE(s, 1); R16P_LINE(s, 2); R16P_LINE(s, 3); \
	VPMOVZXBD (64+16*(s))(SI), Z2; \
	VMOVDQU64 Z2, (4096+64*(s))(DI)

#define R16P_COEF(p) \
	VPMOVZXBW (192+32*(p))(SI), Z3; \
	VMOVDQU64 Z3, (4608+64*(p))(DI)

#define R16P_CONSTS MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z31

#define R16P_BODY \
	R16P_SUB(0); R16P_SUB(1); R16P_SUB(2); R16P_SUB(3); \
	R16P_SUB(4); R16P_SUB(5); R16P_SUB(6); R16P_SUB(7); \
	R16P_COEF(0); R16P_COEF(1); R16P_COEF(2); R16P_COEF(3); \
	VCVTPH2PS (SI), Z4; VMOVUPS Z4, 4864(DI); \
	VCVTPH2PS 32(SI), Z5; VMOVUPS Z5, 4928(DI)

// func subPackQ4KR16(panel, w *byte, n int)
// Writes n super-blocks of one 16-row group (w, 2368 bytes each) as the
// panel's (4992 bytes each).
TEXT ·subPackQ4KR16(SB), NOSPLIT, $0-24
	R16_PACKER(R16P_CONSTS, R16P_BODY, 2368, 4992)

// The Q6_K panel from the interleaved Q6_K layout (q6kr16.go): a
// sub-block's two nibble vectors and its top bits make its four k-quads of
// 6-bit quants (as q6kr16Dot builds them), its int8 scales widen to
// dwords, the coefficient pairs (−32·sc_2h, −32·sc_2h+1) to word pairs.
// Z31 0x0f bytes, Z30 0x30 bytes, Z29 −32 as words.

#define R6P_SUB(s) \
	VMOVDQU64 (288+192*(s))(SI), Z8; \
	VMOVDQU64 (288+192*(s)+64)(SI), Z9; \
	VMOVDQU64 (288+192*(s)+128)(SI), Z10; \
	R6_BUILD; \
	VMOVDQU64 Z8, ((4*(s))*64)(DI); \
	VMOVDQU64 Z11, ((4*(s)+1)*64)(DI); \
	VMOVDQU64 Z9, ((4*(s)+2)*64)(DI); \
	VMOVDQU64 Z12, ((4*(s)+3)*64)(DI); \
	VPMOVSXBD (32+16*(s))(SI), Z14; \
	VMOVDQU64 Z14, (4096+64*(s))(DI)

// R6P_COEF is coefficient pair h: the words −32·sc_2h and −32·sc_2h+1 of
// each row, in its dword.
#define R6P_COEF(h) \
	VPMOVSXBW (32+16*(2*(h)))(SI), Y15; \
	VPMOVSXBW (32+16*(2*(h)+1))(SI), Y14; \
	VPMULLW   Y29, Y15, Y15; \
	VPMULLW   Y29, Y14, Y14; \
	VPMOVZXWD Y15, Z15; \
	VPMOVZXWD Y14, Z14; \
	VPSLLD    $16, Z14, Z14; \
	VPORD     Z14, Z15, Z15; \
	VMOVDQU64 Z15, (5120+64*(h))(DI)

#define R6P_CONSTS \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z31; \
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z30; \
	MOVL $0xffe0ffe0, AX; VPBROADCASTD AX, Z29

#define R6P_BODY \
	R6P_SUB(0); R6P_SUB(1); R6P_SUB(2); R6P_SUB(3); R6P_SUB(4); R6P_SUB(5); R6P_SUB(6); R6P_SUB(7); \
	R6P_SUB(8); R6P_SUB(9); R6P_SUB(10); R6P_SUB(11); R6P_SUB(12); R6P_SUB(13); R6P_SUB(14); R6P_SUB(15); \
	R6P_COEF(0); R6P_COEF(1); R6P_COEF(2); R6P_COEF(3); R6P_COEF(4); R6P_COEF(5); R6P_COEF(6); R6P_COEF(7); \
	VCVTPH2PS (SI), Z13; VMOVUPS Z13, 5632(DI)

// func subPackQ6KR16(panel, w *byte, n int)
// Writes n super-blocks of one 16-row group (w, 3360 bytes each) as the
// Q6_K panel's (5696 bytes each).
TEXT ·subPackQ6KR16(SB), NOSPLIT, $0-24
	R16_PACKER(R6P_CONSTS, R6P_BODY, 3360, 5696)
