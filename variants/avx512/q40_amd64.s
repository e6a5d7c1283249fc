//go:build !noasm

#include "textflag.h"
#include "macros_amd64.h"

// The Q4_0 row kernel (Q4_0 weights × Q8_0 activations), written by hand
// over the Q8_0 kernel's generated macros (Q80_SCALES, Q80_SCALE): two
// blocks a step, each block's 16 bytes unpacked to its 32 unsigned nibbles
// (low nibbles are values 0-15, high nibbles 16-31), VPDPBUSD of them
// against the signed activations, less VPDPBUSD of 8s (the −8 offset, as
// Σ8·x), then d_w·d_x per block into float lanes as the Q8_0 kernel does.

// Q40_NIBBLES unpacks the 16 quant bytes at off(SI) into the 32 bytes of
// yq (xq its XMM): low nibbles, then high nibbles; xt a scratch XMM. X31
// holds 0x0f bytes.
#define Q40_NIBBLES(off, yq, xq, xt) \
	VMOVDQU off(SI), xq; \
	VPSRLW $0x04, xq, xt; \
	VPANDD X31, xq, xq; \
	VPANDD X31, xt, xt; \
	VINSERTI128 $0x01, xt, yq, yq

// Q40_DOT is Σ (q−8)·x of the blocks in Z0 (nibbles) and Z2 (Q8_0 quants)
// in the int32 lanes of Z4 (Z27: 8 in every byte).
#define Q40_DOT \
	VPXORD Z4, Z4, Z4; \
	VPDPBUSD Z2, Z0, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPDPBUSD Z2, Z27, Z5; \
	VPSUBD Z5, Z4, Z4

// func q40RowsVNNI(dst *float32, rows int, w *byte, xq *byte, nb int)
TEXT ·q40RowsVNNI(SB), NOSPLIT, $0-40
	KQ_ARGS(SI, xq)
	VMOVDQU64 ·q80Spread+0(SB), Z29
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z27
	ROWS_TOP(q40Row, q40Done, 32)
	VPXORD Z24, Z24, Z24
	SHRQ $0x01, CX
	JZ q40Single
q40Pair:
	Q40_NIBBLES(2, Y0, X0, X1)
	Q40_NIBBLES(20, Y10, X10, X11)
	VINSERTI64X4 $0x01, Y10, Z0, Z0
	VMOVDQU8 2(DI), Y2
	VINSERTI64X4 $0x01, 36(DI), Z2, Z2
	MOVWLZX (SI), AX
	MOVWLZX 18(SI), R11
	SHLL $0x10, R11
	ORL R11, AX
	Q80_SCALES(DI, BX)
	Q40_DOT
	Q80_SCALE
	ADDQ $0x24, SI
	ADDQ $0x44, DI
	DECQ CX
	JNZ q40Pair
q40Single:
	MOVQ nb+32(FP), CX
	ANDQ $0x01, CX
	JZ q40Store
	Q40_NIBBLES(2, Y0, X0, X1)
	VMOVDQU8 2(DI), Y2
	MOVWLZX (SI), AX
	MOVWLZX (DI), BX
	Q40_DOT
	Q80_SCALE
	ADDQ $0x12, SI
q40Store:
	ROW_STORE(Z24, Y24)
	ROWS_END(q40Row, q40Done)
