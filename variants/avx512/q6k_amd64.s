//go:build !noasm

#include "textflag.h"

// Q6_K × Q8_K matrix-vector product, one row at a time.
//
// Each half super-block (128 values) is one 64-byte load of low nibbles
// (values 0-63 low, 64-127 high, in order) and 32 bytes of high bits, which
// [qh, qh>>2] spreads over both 32-byte halves so that bits 4-5 (after <<4
// for the low set) land on the right values. The quants stay unsigned
// (0..63): VPMADDUBSW against the activations, then the 16 int8 scales,
// spread by VPERMW one per 128-bit lane, weight the word pairs into int32
// lanes. The -32 offset is 32·Σ scale·bsum, one VPMADDWD over the
// activation's bsums.
//
// Register plan: Z0/Z1 activations, Z4/Z5 int accumulators, Z6-Z8 scratch,
// Z10-Z13 quants and products, Z14 scale words, Z16-Z19 spread scales,
// Z23 d·dx, Z24 float sum, Z26-Z31 constants.

DATA ·q6kScaleIdx+0(SB)/8, $0x0000000000000000
DATA ·q6kScaleIdx+8(SB)/8, $0x0000000000000000
DATA ·q6kScaleIdx+16(SB)/8, $0x0001000100010001
DATA ·q6kScaleIdx+24(SB)/8, $0x0001000100010001
DATA ·q6kScaleIdx+32(SB)/8, $0x0002000200020002
DATA ·q6kScaleIdx+40(SB)/8, $0x0002000200020002
DATA ·q6kScaleIdx+48(SB)/8, $0x0003000300030003
DATA ·q6kScaleIdx+56(SB)/8, $0x0003000300030003
DATA ·q6kScaleIdx+64(SB)/8, $0x0004000400040004
DATA ·q6kScaleIdx+72(SB)/8, $0x0004000400040004
DATA ·q6kScaleIdx+80(SB)/8, $0x0005000500050005
DATA ·q6kScaleIdx+88(SB)/8, $0x0005000500050005
DATA ·q6kScaleIdx+96(SB)/8, $0x0006000600060006
DATA ·q6kScaleIdx+104(SB)/8, $0x0006000600060006
DATA ·q6kScaleIdx+112(SB)/8, $0x0007000700070007
DATA ·q6kScaleIdx+120(SB)/8, $0x0007000700070007
DATA ·q6kScaleIdx+128(SB)/8, $0x0008000800080008
DATA ·q6kScaleIdx+136(SB)/8, $0x0008000800080008
DATA ·q6kScaleIdx+144(SB)/8, $0x0009000900090009
DATA ·q6kScaleIdx+152(SB)/8, $0x0009000900090009
DATA ·q6kScaleIdx+160(SB)/8, $0x000a000a000a000a
DATA ·q6kScaleIdx+168(SB)/8, $0x000a000a000a000a
DATA ·q6kScaleIdx+176(SB)/8, $0x000b000b000b000b
DATA ·q6kScaleIdx+184(SB)/8, $0x000b000b000b000b
DATA ·q6kScaleIdx+192(SB)/8, $0x000c000c000c000c
DATA ·q6kScaleIdx+200(SB)/8, $0x000c000c000c000c
DATA ·q6kScaleIdx+208(SB)/8, $0x000d000d000d000d
DATA ·q6kScaleIdx+216(SB)/8, $0x000d000d000d000d
DATA ·q6kScaleIdx+224(SB)/8, $0x000e000e000e000e
DATA ·q6kScaleIdx+232(SB)/8, $0x000e000e000e000e
DATA ·q6kScaleIdx+240(SB)/8, $0x000f000f000f000f
DATA ·q6kScaleIdx+248(SB)/8, $0x000f000f000f000f
GLOBL ·q6kScaleIdx(SB), RODATA|NOPTR, $256

#define Q6K_PROLOGUE \
	MOVQ dst+0(FP), DX; \
	MOVQ rows+8(FP), R8; \
	MOVQ w+16(FP), SI; \
	MOVQ xq+24(FP), R10; \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z31; \
	MOVL $0x30303030, AX; \
	VPBROADCASTD AX, Z30; \
	VMOVDQU64 ·q6kScaleIdx+0(SB), Z29; \
	VMOVDQU64 ·q6kScaleIdx+64(SB), Z28; \
	VMOVDQU64 ·q6kScaleIdx+128(SB), Z27; \
	VMOVDQU64 ·q6kScaleIdx+192(SB), Z26

// Quants of half a block (ql at qlOff, qh at qhOff) into lo (values 0-63) and
// hi (64-127), multiplied by the activations at yOff into word pairs.
#define Q6K_HALF(qlOff, qhOff, yOff, lo, hi) \
	VMOVDQU8 qlOff(SI), Z6; \
	VMOVDQU8 qhOff(SI), Y7; \
	VPSRLW $2, Y7, Y8; \
	VINSERTI64X4 $1, Y8, Z7, Z7; \
	VPSRLW $4, Z6, hi; \
	VPANDD Z31, Z6, lo; \
	VPANDD Z31, hi, hi; \
	VPSLLW $4, Z7, Z8; \
	VPANDD Z30, Z8, Z8; \
	VPORD Z8, lo, lo; \
	VPANDD Z30, Z7, Z7; \
	VPORD Z7, hi, hi; \
	VMOVDQU8 yOff(DI), Z0; \
	VMOVDQU8 yOff+64(DI), Z1; \
	VPMADDUBSW Z0, lo, lo; \
	VPMADDUBSW Z1, hi, hi

#define Q6K_BLOCK_HEAD \
	VPMOVSXBW 192(SI), Y14; \
	VPERMW Z14, Z29, Z16; \
	VPERMW Z14, Z28, Z17; \
	VPERMW Z14, Z27, Z18; \
	VPERMW Z14, Z26, Z19; \
	Q6K_HALF(0, 128, 4, Z10, Z11); \
	Q6K_HALF(64, 160, 132, Z12, Z13)

// Subtract the offset term, scale by d·dx into Z24, next block.
#define Q6K_BLOCK_TAIL(label) \
	VPMADDWD 260(DI), Y14, Y15; \
	VPSLLD $5, Y15, Y15; \
	VPSUBD Z15, Z4, Z4; \
	VCVTDQ2PS Z4, Z4; \
	MOVWLZX 208(SI), AX; \
	VMOVD AX, X6; \
	VCVTPH2PS X6, X6; \
	VMULSS (DI), X6, X6; \
	VBROADCASTSS X6, Z23; \
	VFMADD231PS Z23, Z4, Z24; \
	ADDQ $210, SI; \
	ADDQ $292, DI; \
	DECQ CX; \
	JNZ label

// Reduce Z24 to one float and store it at (DX).
#define Q6K_ROW_STORE \
	VEXTRACTF64X4 $1, Z24, Y7; \
	VMOVAPS Y24, Y6; \
	VADDPS Y7, Y6, Y6; \
	VEXTRACTF128 $1, Y6, X7; \
	VADDPS X7, X6, X6; \
	VPSHUFD $0x4e, X6, X7; \
	VADDPS X7, X6, X6; \
	VPSHUFD $0xb1, X6, X7; \
	VADDSS X7, X6, X6; \
	VMOVSS X6, (DX); \
	ADDQ $4, DX

// func q6kRowsAVX512(dst *float32, rows int, w, xq *byte, nb int)
TEXT ·q6kRowsAVX512(SB), NOSPLIT, $0-40
	Q6K_PROLOGUE
q6kRow:
	TESTQ R8, R8
	JZ q6kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z24, Z24, Z24
q6kBlock:
	Q6K_BLOCK_HEAD
	VPMADDWD Z16, Z10, Z4
	VPMADDWD Z17, Z11, Z5
	VPMADDWD Z18, Z12, Z10
	VPMADDWD Z19, Z13, Z11
	VPADDD Z5, Z4, Z4
	VPADDD Z11, Z10, Z10
	VPADDD Z10, Z4, Z4
	Q6K_BLOCK_TAIL(q6kBlock)
	Q6K_ROW_STORE
	DECQ R8
	JMP q6kRow
q6kDone:
	VZEROUPPER
	RET

// func q6kRowsVNNI(dst *float32, rows int, w, xq *byte, nb int)
TEXT ·q6kRowsVNNI(SB), NOSPLIT, $0-40
	Q6K_PROLOGUE
vq6kRow:
	TESTQ R8, R8
	JZ vq6kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z24, Z24, Z24
vq6kBlock:
	Q6K_BLOCK_HEAD
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPDPWSSD Z16, Z10, Z4
	VPDPWSSD Z17, Z11, Z5
	VPDPWSSD Z18, Z12, Z4
	VPDPWSSD Z19, Z13, Z5
	VPADDD Z5, Z4, Z4
	Q6K_BLOCK_TAIL(vq6kBlock)
	Q6K_ROW_STORE
	DECQ R8
	JMP vq6kRow
vq6kDone:
	VZEROUPPER
	RET

// func q6kRowsVNNIPrefetch(dst *float32, rows int, w, xq *byte, nb, dist int)
//
// q6kRowsVNNI with software prefetches dist bytes ahead of the weight stream
// (four lines per 210-byte block), which keep running across 4 KiB page
// boundaries where the hardware prefetcher stops.
TEXT ·q6kRowsVNNIPrefetch(SB), NOSPLIT, $0-48
	Q6K_PROLOGUE
	MOVQ dist+40(FP), R12
pq6kRow:
	TESTQ R8, R8
	JZ pq6kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z24, Z24, Z24
pq6kBlock:
	PREFETCHT0 (SI)(R12*1)
	PREFETCHT0 64(SI)(R12*1)
	PREFETCHT0 128(SI)(R12*1)
	PREFETCHT0 192(SI)(R12*1)
	Q6K_BLOCK_HEAD
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPDPWSSD Z16, Z10, Z4
	VPDPWSSD Z17, Z11, Z5
	VPDPWSSD Z18, Z12, Z4
	VPDPWSSD Z19, Z13, Z5
	VPADDD Z5, Z4, Z4
	Q6K_BLOCK_TAIL(pq6kBlock)
	Q6K_ROW_STORE
	DECQ R8
	JMP pq6kRow
pq6kDone:
	VZEROUPPER
	RET
