//go:build !noasm

#include "textflag.h"

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

// func subPackQ4KR16(panel, w *byte, nb int)
// Writes nb super-blocks of one 16-row group (w, 2368 bytes each) as the
// panel's (4992 bytes each).
TEXT ·subPackQ4KR16(SB), NOSPLIT, $0-24
	MOVQ panel+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	TESTQ CX, CX
	JZ    done
loop:
	R16P_SUB(0); R16P_SUB(1); R16P_SUB(2); R16P_SUB(3)
	R16P_SUB(4); R16P_SUB(5); R16P_SUB(6); R16P_SUB(7)
	R16P_COEF(0); R16P_COEF(1); R16P_COEF(2); R16P_COEF(3)
	VCVTPH2PS (SI), Z4
	VMOVUPS   Z4, 4864(DI)
	VCVTPH2PS 32(SI), Z5
	VMOVUPS   Z5, 4928(DI)
	ADDQ $2368, SI
	ADDQ $4992, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET
