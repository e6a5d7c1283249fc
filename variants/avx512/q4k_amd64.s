//go:build !noasm

#include "textflag.h"

// Q4_K × Q8_K matrix-vector product, one row at a time.
//
// Per super-block: the 128 quant bytes are two 64-byte loads; their low and
// high nibbles are four vectors of 64 unsigned 4-bit values, each covering
// two 32-value sub-blocks (bytes 0-31 one, 32-63 the other). VPMADDUBSW
// multiplies them by the matching signed activation bytes into word pairs
// (at most 2·15·128, no saturation); the sub-block scales, spread by VPSHUFB
// over the words, weight the pairs into int32 lanes (VPMADDWD + VPADDD, or
// VPDPWSSD with VNNI). The mins term is the 16 activation bsums times the
// mins. Integer sums are exact per super-block; they are scaled by d·dx and
// dmin·dx into float32 lane accumulators, reduced once per row.
//
// Register plan: Z0-Z3 activations, Z4/Z5 int accumulators, Z6-Z9 scratch,
// Z10-Z13 quants and products, Z16-Z19 scale words, Z20 scales, Z21 mins,
// Z22 dmin·dx, Z23 d·dx, Z24 float sum, Z25 float mins sum, Z26-Z31 constants.

DATA ·q4kScaleIdx+0(SB)/8, $0x8000800080008000
DATA ·q4kScaleIdx+8(SB)/8, $0x8000800080008000
DATA ·q4kScaleIdx+16(SB)/8, $0x8000800080008000
DATA ·q4kScaleIdx+24(SB)/8, $0x8000800080008000
DATA ·q4kScaleIdx+32(SB)/8, $0x8002800280028002
DATA ·q4kScaleIdx+40(SB)/8, $0x8002800280028002
DATA ·q4kScaleIdx+48(SB)/8, $0x8002800280028002
DATA ·q4kScaleIdx+56(SB)/8, $0x8002800280028002
DATA ·q4kScaleIdx+64(SB)/8, $0x8001800180018001
DATA ·q4kScaleIdx+72(SB)/8, $0x8001800180018001
DATA ·q4kScaleIdx+80(SB)/8, $0x8001800180018001
DATA ·q4kScaleIdx+88(SB)/8, $0x8001800180018001
DATA ·q4kScaleIdx+96(SB)/8, $0x8003800380038003
DATA ·q4kScaleIdx+104(SB)/8, $0x8003800380038003
DATA ·q4kScaleIdx+112(SB)/8, $0x8003800380038003
DATA ·q4kScaleIdx+120(SB)/8, $0x8003800380038003
DATA ·q4kScaleIdx+128(SB)/8, $0x8004800480048004
DATA ·q4kScaleIdx+136(SB)/8, $0x8004800480048004
DATA ·q4kScaleIdx+144(SB)/8, $0x8004800480048004
DATA ·q4kScaleIdx+152(SB)/8, $0x8004800480048004
DATA ·q4kScaleIdx+160(SB)/8, $0x8006800680068006
DATA ·q4kScaleIdx+168(SB)/8, $0x8006800680068006
DATA ·q4kScaleIdx+176(SB)/8, $0x8006800680068006
DATA ·q4kScaleIdx+184(SB)/8, $0x8006800680068006
DATA ·q4kScaleIdx+192(SB)/8, $0x8005800580058005
DATA ·q4kScaleIdx+200(SB)/8, $0x8005800580058005
DATA ·q4kScaleIdx+208(SB)/8, $0x8005800580058005
DATA ·q4kScaleIdx+216(SB)/8, $0x8005800580058005
DATA ·q4kScaleIdx+224(SB)/8, $0x8007800780078007
DATA ·q4kScaleIdx+232(SB)/8, $0x8007800780078007
DATA ·q4kScaleIdx+240(SB)/8, $0x8007800780078007
DATA ·q4kScaleIdx+248(SB)/8, $0x8007800780078007
GLOBL ·q4kScaleIdx(SB), RODATA|NOPTR, $256

DATA ·q4kMinIdx+0(SB)/8, $0x8001800180008000
DATA ·q4kMinIdx+8(SB)/8, $0x8003800380028002
DATA ·q4kMinIdx+16(SB)/8, $0x8005800580048004
DATA ·q4kMinIdx+24(SB)/8, $0x8007800780068006
GLOBL ·q4kMinIdx(SB), RODATA|NOPTR, $32

// args: dst+0, rows+8, w+16, xq+24, nb+32
#define Q4K_PROLOGUE \
	MOVQ dst+0(FP), DX; \
	MOVQ rows+8(FP), R8; \
	MOVQ w+16(FP), SI; \
	MOVQ xq+24(FP), R10; \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z31; \
	VMOVDQU64 ·q4kScaleIdx+0(SB), Z30; \
	VMOVDQU64 ·q4kScaleIdx+64(SB), Z29; \
	VMOVDQU64 ·q4kScaleIdx+128(SB), Z28; \
	VMOVDQU64 ·q4kScaleIdx+192(SB), Z27; \
	VMOVDQU64 ·q4kMinIdx+0(SB), Y26

// Unpack the 12 scale bytes at 4(SI) into AX = 8 scales, BX = 8 mins
// (ggml's get_scale_min_k4, four at a time).
#define Q4K_SCALES \
	MOVL 4(SI), AX; \
	MOVL 8(SI), BX; \
	MOVL 12(SI), R9; \
	MOVL R9, R11; \
	SHRL $4, R11; \
	ANDL $0x0f0f0f0f, R11; \
	MOVL BX, R13; \
	SHRL $6, R13; \
	ANDL $0x03030303, R13; \
	SHLL $4, R13; \
	ORL R13, R11; \
	ANDL $0x0f0f0f0f, R9; \
	MOVL AX, R13; \
	SHRL $6, R13; \
	ANDL $0x03030303, R13; \
	SHLL $4, R13; \
	ORL R13, R9; \
	ANDL $0x3f3f3f3f, BX; \
	ANDL $0x3f3f3f3f, AX; \
	SHLQ $32, R9; \
	ORQ R9, AX; \
	SHLQ $32, R11; \
	ORQ R11, BX

// Everything of one super-block up to the four products in Z10-Z13 and the
// scale words in Z16-Z19; the mins term is folded into Z25.
#define Q4K_BLOCK_HEAD \
	Q4K_SCALES; \
	VPBROADCASTQ AX, Z20; \
	VPBROADCASTQ BX, Y21; \
	VPSHUFB Y26, Y21, Y21; \
	VPMADDWD 260(DI), Y21, Y21; \
	VCVTDQ2PS Y21, Y21; \
	VMOVD (SI), X6; \
	VCVTPH2PS X6, X6; \
	VBROADCASTSS (DI), X7; \
	VMULPS X7, X6, X6; \
	VBROADCASTSS X6, Z23; \
	VMOVSHDUP X6, X6; \
	VBROADCASTSS X6, Y22; \
	VFMADD231PS Y22, Y21, Y25; \
	VPSHUFB Z30, Z20, Z16; \
	VPSHUFB Z29, Z20, Z17; \
	VPSHUFB Z28, Z20, Z18; \
	VPSHUFB Z27, Z20, Z19; \
	VMOVDQU8 16(SI), Z10; \
	VPSRLW $4, Z10, Z11; \
	VPANDD Z31, Z10, Z10; \
	VPANDD Z31, Z11, Z11; \
	VMOVDQU8 80(SI), Z12; \
	VPSRLW $4, Z12, Z13; \
	VPANDD Z31, Z12, Z12; \
	VPANDD Z31, Z13, Z13; \
	VMOVDQU8 4(DI), Y0; \
	VINSERTI64X4 $1, 68(DI), Z0, Z0; \
	VMOVDQU8 36(DI), Y1; \
	VINSERTI64X4 $1, 100(DI), Z1, Z1; \
	VMOVDQU8 132(DI), Y2; \
	VINSERTI64X4 $1, 196(DI), Z2, Z2; \
	VMOVDQU8 164(DI), Y3; \
	VINSERTI64X4 $1, 228(DI), Z3, Z3; \
	VPMADDUBSW Z0, Z10, Z10; \
	VPMADDUBSW Z1, Z11, Z11; \
	VPMADDUBSW Z2, Z12, Z12; \
	VPMADDUBSW Z3, Z13, Z13

// Scale Z4 (int32 lanes) by d·dx into the float sum; next block.
#define Q4K_BLOCK_TAIL(label) \
	VCVTDQ2PS Z4, Z4; \
	VFMADD231PS Z23, Z4, Z24; \
	ADDQ $144, SI; \
	ADDQ $292, DI; \
	DECQ CX; \
	JNZ label

// Reduce Z24 - Z25 to one float and store it at (DX).
#define ROW_STORE \
	VSUBPS Z25, Z24, Z6; \
	VEXTRACTF64X4 $1, Z6, Y7; \
	VADDPS Y7, Y6, Y6; \
	VEXTRACTF128 $1, Y6, X7; \
	VADDPS X7, X6, X6; \
	VPSHUFD $0x4e, X6, X7; \
	VADDPS X7, X6, X6; \
	VPSHUFD $0xb1, X6, X7; \
	VADDSS X7, X6, X6; \
	VMOVSS X6, (DX); \
	ADDQ $4, DX

// func q4kRowsAVX512(dst *float32, rows int, w, xq *byte, nb int)
TEXT ·q4kRowsAVX512(SB), NOSPLIT, $0-40
	Q4K_PROLOGUE
q4kRow:
	TESTQ R8, R8
	JZ q4kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
q4kBlock:
	Q4K_BLOCK_HEAD
	VPMADDWD Z16, Z10, Z4
	VPMADDWD Z17, Z11, Z5
	VPMADDWD Z18, Z12, Z10
	VPMADDWD Z19, Z13, Z11
	VPADDD Z5, Z4, Z4
	VPADDD Z11, Z10, Z10
	VPADDD Z10, Z4, Z4
	Q4K_BLOCK_TAIL(q4kBlock)
	ROW_STORE
	DECQ R8
	JMP q4kRow
q4kDone:
	VZEROUPPER
	RET

// func q4kRowsVNNI(dst *float32, rows int, w, xq *byte, nb int)
TEXT ·q4kRowsVNNI(SB), NOSPLIT, $0-40
	Q4K_PROLOGUE
vq4kRow:
	TESTQ R8, R8
	JZ vq4kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
vq4kBlock:
	Q4K_BLOCK_HEAD
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPDPWSSD Z16, Z10, Z4
	VPDPWSSD Z17, Z11, Z5
	VPDPWSSD Z18, Z12, Z4
	VPDPWSSD Z19, Z13, Z5
	VPADDD Z5, Z4, Z4
	Q4K_BLOCK_TAIL(vq4kBlock)
	ROW_STORE
	DECQ R8
	JMP vq4kRow
vq4kDone:
	VZEROUPPER
	RET

// func q4kRowsVNNIPrefetch(dst *float32, rows int, w, xq *byte, nb, dist int)
//
// q4kRowsVNNI with software prefetches dist bytes ahead of the weight stream
// (three lines per 144-byte block), which keep running across 4 KiB page
// boundaries where the hardware prefetcher stops.
TEXT ·q4kRowsVNNIPrefetch(SB), NOSPLIT, $0-48
	Q4K_PROLOGUE
	MOVQ dist+40(FP), R12
pq4kRow:
	TESTQ R8, R8
	JZ pq4kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
pq4kBlock:
	PREFETCHT0 (SI)(R12*1)
	PREFETCHT0 64(SI)(R12*1)
	PREFETCHT0 128(SI)(R12*1)
	Q4K_BLOCK_HEAD
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPDPWSSD Z16, Z10, Z4
	VPDPWSSD Z17, Z11, Z5
	VPDPWSSD Z18, Z12, Z4
	VPDPWSSD Z19, Z13, Z5
	VPADDD Z5, Z4, Z4
	Q4K_BLOCK_TAIL(pq4kBlock)
	ROW_STORE
	DECQ R8
	JMP pq4kRow
pq4kDone:
	VZEROUPPER
	RET
