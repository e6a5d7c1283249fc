//go:build !noasm

#include "textflag.h"

// The Q8_0 and Q4_0 GEMM of gemm80_amd64.go (matmul/q8_0 and matmul/q4_0:
// avx512-vnni-gemm), written by hand. Weights are packed per call into
// 16-row panels of unsigned bytes u (Q8_0: w+128, Q4_0: the nibble q) as
// k-quads, one row per dword lane, with d_w as float32; the activations into
// blocks of 12 tokens, their Q8_0 quants and, per token and block, the
// offset term −c·Σx (c 128 or 8: Σu·x − c·Σx = Σw·x) and d_x. Per block the
// 12 int32 accumulators start at the offset term, take 8 VPDPBUSD each (the
// 16 rows' k-quad against one token's broadcast dword), then
// d_w·d_x·float(sum) into 12 float accumulators.

// GEMM_GATHER(off, z): z = the dword at off(SI) of each row in the mask R8
// (Z31 row offsets).
#define GEMM_GATHER(off, z) \
	VPXORD z, z, z; \
	KMOVW R8, K1; \
	VPGATHERDD off(SI)(Z31*1), K1, z

// GEMM_D: the fp16 d at the start of each row's block as float32 at
// 512(DI) (rows off the mask: 0).
#define GEMM_D \
	GEMM_GATHER(0, Z1); \
	VPMOVDW Z1, Y1; \
	VCVTPH2PS Y1, Z1; \
	VMOVUPS Z1, 512(DI)

// GEMM_Q80_KQ(kq): k-quad kq of a Q8_0 block of the 16 rows, w+128 (w XOR
// 0x80, Z30), at 64·kq(DI).
#define GEMM_Q80_KQ(kq) \
	GEMM_GATHER((2+4*kq), Z0); \
	VPXORD Z30, Z0, Z0; \
	VMOVDQU32 Z0, (64*kq)(DI)

// GEMM_Q40_KQ2(j): quant dword j of a Q4_0 block of the 16 rows, its low
// nibbles as k-quad j, its high ones as k-quad 4+j (Z30 0x0f bytes).
#define GEMM_Q40_KQ2(j) \
	GEMM_GATHER((2+4*j), Z0); \
	VPANDD Z30, Z0, Z2; \
	VMOVDQU32 Z2, (64*j)(DI); \
	VPSRLD $4, Z0, Z3; \
	VPANDD Z30, Z3, Z3; \
	VMOVDQU32 Z3, (256+64*j)(DI)

// GEMM_PACK_ARGS loads gemmPackArgs (panel 0, w 8: row 0 of the tile at
// block 0, nb 16, mask 24, idx 32: 16 int32 row offsets) and the constant
// c into Z30.
#define GEMM_PACK_ARGS(c) \
	MOVQ a+0(FP), AX; \
	MOVQ 0(AX), DI; \
	MOVQ 8(AX), SI; \
	MOVQ 16(AX), CX; \
	MOVQ 24(AX), R8; \
	VMOVDQU32 32(AX), Z31; \
	MOVL $c, R9; \
	VPBROADCASTD R9, Z30

// GEMM_KQ(kq): k-quad kq of the panel (Z24) against each of the 12 tokens'
// broadcast dword kq, into Z0-Z11.
#define GEMM_KQ(kq) \
	VMOVDQU32 (64*kq)(SI), Z24; \
	VPDPBUSD.BCST (4*kq)(DI), Z24, Z0; \
	VPDPBUSD.BCST (32+4*kq)(DI), Z24, Z1; \
	VPDPBUSD.BCST (64+4*kq)(DI), Z24, Z2; \
	VPDPBUSD.BCST (96+4*kq)(DI), Z24, Z3; \
	VPDPBUSD.BCST (128+4*kq)(DI), Z24, Z4; \
	VPDPBUSD.BCST (160+4*kq)(DI), Z24, Z5; \
	VPDPBUSD.BCST (192+4*kq)(DI), Z24, Z6; \
	VPDPBUSD.BCST (224+4*kq)(DI), Z24, Z7; \
	VPDPBUSD.BCST (256+4*kq)(DI), Z24, Z8; \
	VPDPBUSD.BCST (288+4*kq)(DI), Z24, Z9; \
	VPDPBUSD.BCST (320+4*kq)(DI), Z24, Z10; \
	VPDPBUSD.BCST (352+4*kq)(DI), Z24, Z11

// GEMM_SCALE(t, zi, zf): token t's block sums zi as float32, times
// d_w (Z25) · d_x, into zf.
#define GEMM_SCALE(t, zi, zf) \
	VCVTDQ2PS zi, zi; \
	VMULPS.BCST (432+4*t)(DI), Z25, Z26; \
	VFMADD231PS Z26, zi, zf

// GEMM_STORE(t, zf): unless fewer than t+1 tokens (R11), token t's rows
// (mask K1) from zf to BX, then BX to the next token's.
#define GEMM_STORE(t, zf) \
	CMPQ R11, $(t+1); \
	JB gemmDone; \
	VMOVUPS zf, K1, (BX); \
	ADDQ R10, BX

// func gemmPackQ80(a *gemmPackArgs)
TEXT ·gemmPackQ80(SB), NOSPLIT, $0-8
	GEMM_PACK_ARGS(0x80808080)
	TESTQ CX, CX
	JZ q80pDone
q80pBlock:
	GEMM_Q80_KQ(0)
	GEMM_Q80_KQ(1)
	GEMM_Q80_KQ(2)
	GEMM_Q80_KQ(3)
	GEMM_Q80_KQ(4)
	GEMM_Q80_KQ(5)
	GEMM_Q80_KQ(6)
	GEMM_Q80_KQ(7)
	GEMM_D
	ADDQ $34, SI
	ADDQ $576, DI
	DECQ CX
	JNZ q80pBlock
q80pDone:
	VZEROUPPER
	RET

// func gemmPackQ40(a *gemmPackArgs)
TEXT ·gemmPackQ40(SB), NOSPLIT, $0-8
	GEMM_PACK_ARGS(0x0f0f0f0f)
	TESTQ CX, CX
	JZ q40pDone
q40pBlock:
	GEMM_Q40_KQ2(0)
	GEMM_Q40_KQ2(1)
	GEMM_Q40_KQ2(2)
	GEMM_Q40_KQ2(3)
	GEMM_D
	ADDQ $18, SI
	ADDQ $576, DI
	DECQ CX
	JNZ q40pBlock
q40pDone:
	VZEROUPPER
	RET

// gemmArgs: panel 0, x 8 (the token block's pack, block 0), dst 16
// (&dst[first token][first row]), lddBytes 24, nb 32, ntok 40, mask 48.
// Activation block (512 bytes): 12 × 32 quants, 12 int32 −c·Σx at 384,
// 12 float32 d_x at 432.
//
// func gemmKernel(a *gemmArgs)
TEXT ·gemmKernel(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 32(AX), CX
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	TESTQ CX, CX
	JZ gemmStore
gemmBlock:
	VPBROADCASTD 384(DI), Z0
	VPBROADCASTD 388(DI), Z1
	VPBROADCASTD 392(DI), Z2
	VPBROADCASTD 396(DI), Z3
	VPBROADCASTD 400(DI), Z4
	VPBROADCASTD 404(DI), Z5
	VPBROADCASTD 408(DI), Z6
	VPBROADCASTD 412(DI), Z7
	VPBROADCASTD 416(DI), Z8
	VPBROADCASTD 420(DI), Z9
	VPBROADCASTD 424(DI), Z10
	VPBROADCASTD 428(DI), Z11
	GEMM_KQ(0)
	GEMM_KQ(1)
	GEMM_KQ(2)
	GEMM_KQ(3)
	GEMM_KQ(4)
	GEMM_KQ(5)
	GEMM_KQ(6)
	GEMM_KQ(7)
	VMOVUPS 512(SI), Z25
	GEMM_SCALE(0, Z0, Z12)
	GEMM_SCALE(1, Z1, Z13)
	GEMM_SCALE(2, Z2, Z14)
	GEMM_SCALE(3, Z3, Z15)
	GEMM_SCALE(4, Z4, Z16)
	GEMM_SCALE(5, Z5, Z17)
	GEMM_SCALE(6, Z6, Z18)
	GEMM_SCALE(7, Z7, Z19)
	GEMM_SCALE(8, Z8, Z20)
	GEMM_SCALE(9, Z9, Z21)
	GEMM_SCALE(10, Z10, Z22)
	GEMM_SCALE(11, Z11, Z23)
	ADDQ $576, SI
	ADDQ $512, DI
	DECQ CX
	JNZ gemmBlock
gemmStore:
	MOVQ 16(AX), BX
	MOVQ 24(AX), R10
	MOVQ 40(AX), R11
	MOVQ 48(AX), R8
	KMOVW R8, K1
	GEMM_STORE(0, Z12)
	GEMM_STORE(1, Z13)
	GEMM_STORE(2, Z14)
	GEMM_STORE(3, Z15)
	GEMM_STORE(4, Z16)
	GEMM_STORE(5, Z17)
	GEMM_STORE(6, Z18)
	GEMM_STORE(7, Z19)
	GEMM_STORE(8, Z20)
	GEMM_STORE(9, Z21)
	GEMM_STORE(10, Z22)
	GEMM_STORE(11, Z23)
gemmDone:
	VZEROUPPER
	RET
