//go:build !noasm

#include "textflag.h"
#include "r16pack_amd64.h"

// The tile programs' Q4_K panel (pack.go) from the interleaved layout
// (packr16.go's packQ4KR16 in assembly): a line of the layout is 16 rows ×
// 4 weights, as a tile row is; its low and high nibbles times the rows'
// sub-block scale (VPMULLW on the even and the odd bytes, the scale in
// both words of a row's dword) split into the 7-bit digits of the lo and hi
// tiles. Z31 0x0f bytes, Z30 0x00ff words, Z29 0x007f words, Z28 zero,
// Z10 a sub-block's scales as word pairs.

// R16_DIGITS stores the digit tiles of the quant bytes in n at tile row
// off (its lo tile; the hi tile 1024 bytes on): the even and the odd
// bytes as words times the row's scale (Z10), then step (the products in
// Z3 and Z4: nothing, or Q6_K's offset), split into 7-bit digits.
#define R16_DIGITS(n, off, step) \
	VPANDD  Z30, n, Z3; \
	VPSRLW  $8, n, Z4; \
	VPMULLW Z10, Z3, Z3; \
	VPMULLW Z10, Z4, Z4; \
	step; \
	VPANDD  Z29, Z3, Z5; \
	VPANDD  Z29, Z4, Z6; \
	VPSLLW  $8, Z6, Z6; \
	VPORD   Z6, Z5, Z5; \
	VMOVDQU64 Z5, (off)(DI); \
	VPSRLW  $7, Z3, Z3; \
	VPSRLW  $7, Z4, Z4; \
	VPSLLW  $8, Z4, Z4; \
	VPORD   Z4, Z3, Z3; \
	VMOVDQU64 Z3, (1024+(off))(DI)

#define NO_STEP
#define R16T_DIGITS(n, off) R16_DIGITS(n, off, NO_STEP)

// R16T_LINE is line q of sub-block sb: chunk sb/2, k-quads 8(sb%2)+q (low
// nibbles) and 8(sb%2)+4+q (high).
#define R16T_LINE(sb, q) \
	VMOVDQU64 (320+((sb)*4+(q))*64)(SI), Z0; \
	VPSRLW    $4, Z0, Z2; \
	VPANDD    Z31, Z0, Z1; \
	VPANDD    Z31, Z2, Z2; \
	R16T_DIGITS(Z1, ((sb)/2)*2048+(8*((sb)%2)+(q))*64); \
	R16T_DIGITS(Z2, ((sb)/2)*2048+(8*((sb)%2)+4+(q))*64)

#define R16T_SUB(sb) \
	VPMOVZXBD (64+16*(sb))(SI), Z10; \
	VPSLLD    $16, Z10, Z11; \
	VPORD     Z11, Z10, Z10; \
	R16T_LINE(sb, 0); R16T_LINE(sb, 1); R16T_LINE(sb, 2); R16T_LINE(sb, 3)

#define R16T_COEF(c) \
	VPMOVZXBW (192+32*(c))(SI), Z12; \
	VMOVDQU64 Z12, (8320+64*(c))(DI); \
	VMOVDQU64 Z28, (8320+64*((c)+4))(DI)

#define R16T_CONSTS \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z31; \
	MOVL $0x00ff00ff, AX; VPBROADCASTD AX, Z30; \
	MOVL $0x007f007f, AX; VPBROADCASTD AX, Z29; \
	VPXORD Z28, Z28, Z28

#define R16T_BODY \
	R16T_SUB(0); R16T_SUB(1); R16T_SUB(2); R16T_SUB(3); \
	R16T_SUB(4); R16T_SUB(5); R16T_SUB(6); R16T_SUB(7); \
	VCVTPH2PS (SI), Z13; VMOVUPS Z13, 8192(DI); \
	VCVTPH2PS 32(SI), Z14; VMOVUPS Z14, 8256(DI); \
	R16T_COEF(0); R16T_COEF(1); R16T_COEF(2); R16T_COEF(3)

// func packQ4KR16Tiles(panel, w *byte, n int)
// Writes n super-blocks of one 16-row group (w, 2368 bytes each) as the
// tile panel's (8832 bytes each).
TEXT ·packQ4KR16Tiles(SB), NOSPLIT, $0-24
	R16_PACKER(R16T_CONSTS, R16T_BODY, 2368, 8832)

// The Q6_K panel from its interleaved layout (packQ6KR16 in assembly): a
// sub-block's four lines each a k-quad of 16 rows, the 6-bit quant its
// nibble (low or high half of the first or second 64 bytes) joined with
// two bits of the third 64 (VPTERNLOGD: nibble | shifted tops & 0x30),
// then sc·q + 8192 (VPMULLW, VPADDW) split into the two 7-bit digits as
// above. Z31 0x0f bytes, Z30 0x00ff words, Z29 0x007f words, Z28 0x30
// bytes, Z27 0x0000ffff dwords, Z26 8192 words, Z25 8192 dwords, Z10 a
// sub-block's signed scales as word pairs, Z9 its tops.

// R16Q6_DIGITS is R16T_DIGITS with the signed scale and the offset.
#define Q6_OFFSET VPADDW Z26, Z3, Z3; VPADDW Z26, Z4, Z4
#define R16Q6_DIGITS(n, off) R16_DIGITS(n, off, Q6_OFFSET)

// R16Q6_OFF is the tile row of k-quad q of sub-block sb: chunk sb/4,
// k-quad 4(sb%4)+q.
#define R16Q6_OFF(sb, q) (((sb)/4)*2048+(4*((sb)%4)+(q))*64)

// R16Q6_SUB is sub-block sb (its lines at 288+192sb): k-quads 0 and 1 the
// low and high nibbles of the first 64 bytes with tops bits 0-1 and 2-3,
// k-quads 2 and 3 those of the second with bits 4-5 and 6-7.
#define R16Q6_SUB(sb) \
	VPMOVSXBD (32+16*(sb))(SI), Z10; \
	VPSLLD    $16, Z10, Z11; \
	VPANDD    Z27, Z10, Z10; \
	VPORD     Z11, Z10, Z10; \
	VMOVDQU64 (288+192*(sb)+128)(SI), Z9; \
	VMOVDQU64 (288+192*(sb))(SI), Z0; \
	VPANDD    Z31, Z0, Z1; \
	VPSLLW    $4, Z9, Z2; \
	VPTERNLOGD $0xf8, Z28, Z2, Z1; \
	R16Q6_DIGITS(Z1, R16Q6_OFF(sb, 0)); \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z31, Z1, Z1; \
	VPSLLW    $2, Z9, Z2; \
	VPTERNLOGD $0xf8, Z28, Z2, Z1; \
	R16Q6_DIGITS(Z1, R16Q6_OFF(sb, 1)); \
	VMOVDQU64 (288+192*(sb)+64)(SI), Z0; \
	VPANDD    Z31, Z0, Z1; \
	VPTERNLOGD $0xf8, Z28, Z9, Z1; \
	R16Q6_DIGITS(Z1, R16Q6_OFF(sb, 2)); \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z31, Z1, Z1; \
	VPSRLW    $2, Z9, Z2; \
	VPTERNLOGD $0xf8, Z28, Z2, Z1; \
	R16Q6_DIGITS(Z1, R16Q6_OFF(sb, 3))

// R16Q6_COEF is the block sums' coefficients 8192 + 32·sc of sub-blocks
// 2h and 2h+1, a word pair a row.
#define R16Q6_COEF(h) \
	VPMOVSXBD (32+16*(2*(h)))(SI), Z12; \
	VPMOVSXBD (32+16*(2*(h)+1))(SI), Z13; \
	VPSLLD    $5, Z12, Z12; \
	VPSLLD    $5, Z13, Z13; \
	VPADDD    Z25, Z12, Z12; \
	VPADDD    Z25, Z13, Z13; \
	VPANDD    Z27, Z12, Z12; \
	VPSLLD    $16, Z13, Z13; \
	VPORD     Z13, Z12, Z12; \
	VMOVDQU64 Z12, (8320+64*(h))(DI)

#define R16Q6_CONSTS \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z31; \
	MOVL $0x00ff00ff, AX; VPBROADCASTD AX, Z30; \
	MOVL $0x007f007f, AX; VPBROADCASTD AX, Z29; \
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z28; \
	MOVL $0x0000ffff, AX; VPBROADCASTD AX, Z27; \
	MOVL $0x20002000, AX; VPBROADCASTD AX, Z26; \
	MOVL $0x00002000, AX; VPBROADCASTD AX, Z25

#define R16Q6_BODY \
	R16Q6_SUB(0); R16Q6_SUB(1); R16Q6_SUB(2); R16Q6_SUB(3); \
	R16Q6_SUB(4); R16Q6_SUB(5); R16Q6_SUB(6); R16Q6_SUB(7); \
	R16Q6_SUB(8); R16Q6_SUB(9); R16Q6_SUB(10); R16Q6_SUB(11); \
	R16Q6_SUB(12); R16Q6_SUB(13); R16Q6_SUB(14); R16Q6_SUB(15); \
	VCVTPH2PS (SI), Z13; VMOVUPS Z13, 8192(DI); VMOVUPS Z13, 8256(DI); \
	R16Q6_COEF(0); R16Q6_COEF(1); R16Q6_COEF(2); R16Q6_COEF(3); \
	R16Q6_COEF(4); R16Q6_COEF(5); R16Q6_COEF(6); R16Q6_COEF(7)

// func packQ6KR16Tiles(panel, w *byte, n int)
// Writes n super-blocks of one 16-row Q6_K group (w, 3360 bytes each) as
// the tile panel's (8832 bytes each).
TEXT ·packQ6KR16Tiles(SB), NOSPLIT, $0-24
	R16_PACKER(R16Q6_CONSTS, R16Q6_BODY, 3360, 8832)
