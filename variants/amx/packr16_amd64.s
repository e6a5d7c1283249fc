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

// R16T_DIGITS stores the digit tiles of the nibble bytes in n (Z1 or Z2)
// at tile row off (its lo tile; the hi tile 1024 bytes on).
#define R16T_DIGITS(n, off) \
	VPANDD  Z30, n, Z3; \
	VPSRLW  $8, n, Z4; \
	VPMULLW Z10, Z3, Z3; \
	VPMULLW Z10, Z4, Z4; \
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
