//go:build !noasm

#include "textflag.h"
#include "macros_amd64.h"

// The batched Q5_K kernels (matvec_batch, and matmul for want of a GEMM):
// the Q4_K batched kernels (q4kb_amd64.s, generated) with the block 176
// bytes and the fifth bits added at unpacking, as q5k_amd64.s does for the
// matvec. Written by hand over the generated macros.

// Q5KB_UNPACK is Q4KB_UNPACK of a Q5_K super-block at SI (nibbles at 48,
// qh at 16): after the nibbles, 16 added to each quant whose sub-block bit
// of qh[l] is set (VPTESTMB against ·q5kHighBit, a byte-masked VPADDB of
// ·q5kSixteen), through Z28 and Z29, free until the tokens' products.
#define Q5KB_UNPACK \
	Q4K_SCALES; \
	VPBROADCASTQ AX, Z20; \
	VPBROADCASTQ BX, Y21; \
	VPSHUFB ·q4kMinIdx+0(SB), Y21, Y21; \
	VPSHUFB ·q4kScaleIdx+0(SB), Z20, Z16; \
	VPSHUFB ·q4kScaleIdx+64(SB), Z20, Z17; \
	VPSHUFB ·q4kScaleIdx+128(SB), Z20, Z18; \
	VPSHUFB ·q4kScaleIdx+192(SB), Z20, Z19; \
	VMOVD (SI), X22; \
	VCVTPH2PS X22, X22; \
	VMOVSHDUP X22, X23; \
	VBROADCASTSS X22, Z22; \
	VBROADCASTSS X23, Y23; \
	VMOVDQU8 48(SI), Z24; \
	VPSRLW $0x04, Z24, Z25; \
	VPANDD.BCST ·q4kbNibble+0(SB), Z24, Z24; \
	VPANDD.BCST ·q4kbNibble+0(SB), Z25, Z25; \
	VMOVDQU8 112(SI), Z26; \
	VPSRLW $0x04, Z26, Z27; \
	VPANDD.BCST ·q4kbNibble+0(SB), Z26, Z26; \
	VPANDD.BCST ·q4kbNibble+0(SB), Z27, Z27; \
	VBROADCASTI64X4 16(SI), Z28; \
	VPBROADCASTD ·q5kSixteen+0(SB), Z29; \
	VPTESTMB ·q5kHighBit+0(SB), Z28, K1; \
	VPADDB Z29, Z24, K1, Z24; \
	VPTESTMB ·q5kHighBit+64(SB), Z28, K2; \
	VPADDB Z29, Z25, K2, Z25; \
	VPTESTMB ·q5kHighBit+128(SB), Z28, K3; \
	VPADDB Z29, Z26, K3, Z26; \
	VPTESTMB ·q5kHighBit+192(SB), Z28, K4; \
	VPADDB Z29, Z27, K4, Z27

// func q5kBatch1(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch1(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T1, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)

// func q5kBatch2(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch2(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T2, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)

// func q5kBatch3(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch3(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T3, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)

// func q5kBatch4(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch4(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T4, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)

// func q5kBatch5(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch5(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T5, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)

// func q5kBatch6(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch6(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T6, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)

// func q5kBatch7(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch7(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T7, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)

// func q5kBatch8(w *byte, x *byte, dst *float32, ldd int, rows int, nb int, sbStride int)
TEXT ·q5kBatch8(SB), NOSPLIT, $0-56
	KB_ROWS(NONE, KB_T8, Q4KB_CLEAR, NONE, Q5KB_UNPACK, Q4KB_TOKEN, Q4KB_STORE, 176)
