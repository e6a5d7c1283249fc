//go:build !noasm

#include "textflag.h"
#include "macros_amd64.h"

// The Q5_K row kernels: Q4_K's (macros_amd64.h, generated) with the block
// 176 bytes (d, dmin, scales at 0-15 as Q4_K's; qh[32] at 16; the nibbles
// at 48) and each quant's fifth bit added before the products. Written by
// hand: one block macro over the generated ones.

// Q5K_QUANTS loads the nibbles at 48(SI) into Z10-Z13 in Q4K_QUANTS's
// order (Z10: sub-blocks 0 and 2, Z11: 1 and 3, Z12: 4 and 6, Z13: 5 and
// 7, 32 bytes each) and adds 16 where the sub-block's bit of qh[l] is set:
// qh broadcast to both halves (Z14), VPTESTMB against ·q5kHighBit's
// per-half bit (Z10's low half bit 0, its high half bit 2, …), a
// byte-masked VPADDB of 16 (Z15).
#define Q5K_QUANTS \
	VBROADCASTI64X4 16(SI), Z14; \
	VMOVDQU8 48(SI), Z10; \
	VPSRLW $0x04, Z10, Z11; \
	VPANDD Z31, Z10, Z10; \
	VPANDD Z31, Z11, Z11; \
	VMOVDQU8 112(SI), Z12; \
	VPSRLW $0x04, Z12, Z13; \
	VPANDD Z31, Z12, Z12; \
	VPANDD Z31, Z13, Z13; \
	VPTESTMB ·q5kHighBit+0(SB), Z14, K1; \
	VPADDB Z15, Z10, K1, Z10; \
	VPTESTMB ·q5kHighBit+64(SB), Z14, K2; \
	VPADDB Z15, Z11, K2, Z11; \
	VPTESTMB ·q5kHighBit+128(SB), Z14, K3; \
	VPADDB Z15, Z12, K3, Z12; \
	VPTESTMB ·q5kHighBit+192(SB), Z14, K4; \
	VPADDB Z15, Z13, K4, Z13

// Q5K_PROLOGUE is Q4K_PROLOGUE and the byte 16 in every lane of Z15.
#define Q5K_PROLOGUE \
	Q4K_PROLOGUE; \
	MOVL $0x10101010, AX; \
	VPBROADCASTD AX, Z15

// Q5K_BLOCK is Q4K_BLOCK (one row's super-block at SI against the Q8_K
// block at DI into Z24, the mins term into Z25) with Q5K_QUANTS.
#define Q5K_BLOCK(products) \
	Q4K_SCALES; \
	VPBROADCASTQ AX, Z20; \
	VPBROADCASTQ BX, Y21; \
	Q4K_MINS_TERM; \
	VMOVD (SI), X6; \
	VCVTPH2PS X6, X6; \
	VBROADCASTSS (DI), X7; \
	VMULPS X7, X6, X6; \
	VBROADCASTSS X6, Z23; \
	VMOVSHDUP X6, X6; \
	VBROADCASTSS X6, Y22; \
	VFMADD231PS Y22, Y21, Y25; \
	Q4K_SPREAD; \
	Q5K_QUANTS; \
	Q4K_ACTIVATIONS; \
	Q4K_PRODUCTS; \
	products; \
	VCVTDQ2PS Z4, Z4; \
	VFMADD231PS Z23, Z4, Z24

// func q5kRowsVNNI(dst *float32, rows int, w *byte, xq *byte, nb int)
TEXT ·q5kRowsVNNI(SB), NOSPLIT, $0-40
	KQ_ROWS(Q5K_PROLOGUE, NONE, ZERO2(VPXORD, Z24, Z25), NONE, Q5K_BLOCK(PRODUCTS_VNNI), 176, 292, ROW_STORE_SUB(Z24, Z25))

// func q5kRowsVNNIPrefetchNTA(dst *float32, rows int, w *byte, xq *byte, nb int, dist int)
TEXT ·q5kRowsVNNIPrefetchNTA(SB), NOSPLIT, $0-48
	KQ_ROWS(Q5K_PROLOGUE, KQ_DIST, ZERO2(VPXORD, Z24, Z25), PF_LINES3(PREFETCHNTA, R12), Q5K_BLOCK(PRODUCTS_VNNI), 176, 292, ROW_STORE_SUB(Z24, Z25))

// func q5kRowsVNNIPrefetch(dst *float32, rows int, w *byte, xq *byte, nb int, dist int)
TEXT ·q5kRowsVNNIPrefetch(SB), NOSPLIT, $0-48
	KQ_ROWS(Q5K_PROLOGUE, KQ_DIST, ZERO2(VPXORD, Z24, Z25), PF_LINES3(PREFETCHT0, R12), Q5K_BLOCK(PRODUCTS_VNNI), 176, 292, ROW_STORE_SUB(Z24, Z25))
