//go:build !noasm

#include "textflag.h"

// AVX2 (+FMA, F16C) quantized matrix-vector products, one row at a time,
// on 256-bit vectors (Y0-Y15 only). The block arithmetic is the AVX-512
// kernels' at half the width: VPMADDUBSW of unsigned quants by signed
// activations into word pairs, VPMADDWD by VPSHUFB-broadcast sub-block
// scales into int32, exact per block, then scaled into float32 lanes.

DATA q4kWord<>+0(SB)/8, $0x0100010001000100
DATA q4kWord<>+8(SB)/8, $0x0100010001000100
DATA q4kWord<>+16(SB)/8, $0x0100010001000100
DATA q4kWord<>+24(SB)/8, $0x0100010001000100
DATA q4kWord<>+32(SB)/8, $0x0302030203020302
DATA q4kWord<>+40(SB)/8, $0x0302030203020302
DATA q4kWord<>+48(SB)/8, $0x0302030203020302
DATA q4kWord<>+56(SB)/8, $0x0302030203020302
DATA q4kWord<>+64(SB)/8, $0x0504050405040504
DATA q4kWord<>+72(SB)/8, $0x0504050405040504
DATA q4kWord<>+80(SB)/8, $0x0504050405040504
DATA q4kWord<>+88(SB)/8, $0x0504050405040504
DATA q4kWord<>+96(SB)/8, $0x0706070607060706
DATA q4kWord<>+104(SB)/8, $0x0706070607060706
DATA q4kWord<>+112(SB)/8, $0x0706070607060706
DATA q4kWord<>+120(SB)/8, $0x0706070607060706
DATA q4kWord<>+128(SB)/8, $0x0908090809080908
DATA q4kWord<>+136(SB)/8, $0x0908090809080908
DATA q4kWord<>+144(SB)/8, $0x0908090809080908
DATA q4kWord<>+152(SB)/8, $0x0908090809080908
DATA q4kWord<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWord<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWord<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWord<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWord<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWord<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWord<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWord<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWord<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kWord<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kWord<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kWord<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q4kWord<>(SB), RODATA|NOPTR, $256

DATA q4kMinIdx<>+0(SB)/8, $0x8001800180008000
DATA q4kMinIdx<>+8(SB)/8, $0x8003800380028002
DATA q4kMinIdx<>+16(SB)/8, $0x8005800580048004
DATA q4kMinIdx<>+24(SB)/8, $0x8007800780068006
GLOBL q4kMinIdx<>(SB), RODATA|NOPTR, $32

DATA q6kWord<>+0(SB)/8, $0x0100010001000100
DATA q6kWord<>+8(SB)/8, $0x0100010001000100
DATA q6kWord<>+16(SB)/8, $0x0302030203020302
DATA q6kWord<>+24(SB)/8, $0x0302030203020302
DATA q6kWord<>+32(SB)/8, $0x0504050405040504
DATA q6kWord<>+40(SB)/8, $0x0504050405040504
DATA q6kWord<>+48(SB)/8, $0x0706070607060706
DATA q6kWord<>+56(SB)/8, $0x0706070607060706
DATA q6kWord<>+64(SB)/8, $0x0908090809080908
DATA q6kWord<>+72(SB)/8, $0x0908090809080908
DATA q6kWord<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kWord<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kWord<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kWord<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kWord<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kWord<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6kWord<>(SB), RODATA|NOPTR, $128

// Reduce Y14 (minus Y13) to one float at (DX).
#define ROW_STORE(acc, sub) \
	VSUBPS sub, acc, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VPSHUFD $0x4e, X0, X1; \
	VADDPS X1, X0, X0; \
	VPSHUFD $0xb1, X0, X1; \
	VADDSS X1, X0, X0; \
	VMOVSS X0, (DX); \
	ADDQ $4, DX

// Unpack the 12 scale bytes at 4(SI) into AX = 8 scales, BX = 8 mins.
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

// One 32-byte chunk of quants: low nibbles × y[yoff:], high × y[yoff+32:],
// weighted by the scale words picked by s0 and s1, added to Y11.
#define Q4K_CHUNK(qoff, yoff, s0, s1) \
	VMOVDQU qoff(SI), Y0; \
	VPSRLW $4, Y0, Y1; \
	VPAND Y15, Y0, Y0; \
	VPAND Y15, Y1, Y1; \
	VPMADDUBSW yoff(DI), Y0, Y0; \
	VPMADDUBSW yoff+32(DI), Y1, Y1; \
	VPSHUFB q4kWord<>+s0(SB), Y12, Y2; \
	VPSHUFB q4kWord<>+s1(SB), Y12, Y3; \
	VPMADDWD Y2, Y0, Y0; \
	VPMADDWD Y3, Y1, Y1; \
	VPADDD Y0, Y11, Y11; \
	VPADDD Y1, Y11, Y11

// func q4kRowsAVX2(dst *float32, rows int, w, xq *byte, nb int)
TEXT ·q4kRowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ rows+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ xq+24(FP), R10
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
q4kRow:
	TESTQ R8, R8
	JZ q4kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXOR Y14, Y14, Y14
	VPXOR Y13, Y13, Y13
q4kBlock:
	Q4K_SCALES
	// mins · bsums, scaled by dmin·dx into Y13
	VMOVQ BX, X4
	VPBROADCASTQ X4, Y4
	VPSHUFB q4kMinIdx<>(SB), Y4, Y4
	VPMADDWD 260(DI), Y4, Y4
	VCVTDQ2PS Y4, Y4
	VMOVD (SI), X5
	VCVTPH2PS X5, X5
	VBROADCASTSS (DI), X6
	VMULPS X6, X5, X5
	VBROADCASTSS X5, Y10
	VMOVSHDUP X5, X5
	VBROADCASTSS X5, Y9
	VFMADD231PS Y9, Y4, Y13
	// the 8 scales as words, in both lanes
	VMOVQ AX, X12
	VPMOVZXBW X12, X12
	VINSERTI128 $1, X12, Y12, Y12
	VPXOR Y11, Y11, Y11
	Q4K_CHUNK(16, 4, 0, 32)
	Q4K_CHUNK(48, 68, 64, 96)
	Q4K_CHUNK(80, 132, 128, 160)
	Q4K_CHUNK(112, 196, 192, 224)
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y10, Y11, Y14
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4kBlock
	ROW_STORE(Y14, Y13)
	DECQ R8
	JMP q4kRow
q4kDone:
	VZEROUPPER
	RET

// Finish one Q6_K product: Y0 holds the low 4 bits, Y1 the high bits
// already at bits 4-5 (unmasked); times y at yoff, weighted by the scale
// words of Y12 picked by sidx, added to Y11.
#define Q6K_FINISH(yoff, sidx) \
	VPAND Y14, Y1, Y1; \
	VPOR Y1, Y0, Y0; \
	VPMADDUBSW yoff(DI), Y0, Y0; \
	VPSHUFB q6kWord<>+sidx(SB), Y12, Y2; \
	VPMADDWD Y2, Y0, Y0; \
	VPADDD Y0, Y11, Y11

// One half block (128 values): ql at qloff (64 bytes), qh at qhoff (32).
#define Q6K_HALF(qloff, qhoff, yoff) \
	VMOVDQU qloff(SI), Y6; \
	VMOVDQU qloff+32(SI), Y7; \
	VMOVDQU qhoff(SI), Y8; \
	VPAND Y15, Y6, Y0; \
	VPSLLW $4, Y8, Y1; \
	Q6K_FINISH(yoff, 0); \
	VPAND Y15, Y7, Y0; \
	VPSLLW $2, Y8, Y1; \
	Q6K_FINISH(yoff+32, 32); \
	VPSRLW $4, Y6, Y0; \
	VPAND Y15, Y0, Y0; \
	VMOVDQA Y8, Y1; \
	Q6K_FINISH(yoff+64, 64); \
	VPSRLW $4, Y7, Y0; \
	VPAND Y15, Y0, Y0; \
	VPSRLW $2, Y8, Y1; \
	Q6K_FINISH(yoff+96, 96)

// func q6kRowsAVX2(dst *float32, rows int, w, xq *byte, nb int)
//
// The quants stay unsigned (0..63); the -32 offset is 32·Σ scale·bsum.
TEXT ·q6kRowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ rows+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ xq+24(FP), R10
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x30303030, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
q6kRow:
	TESTQ R8, R8
	JZ q6kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXOR Y13, Y13, Y13
q6kBlock:
	VPMOVSXBW 192(SI), Y9
	VPMADDWD 260(DI), Y9, Y10
	VPSLLD $5, Y10, Y10
	VPXOR Y11, Y11, Y11
	VPSUBD Y10, Y11, Y11
	VPERMQ $0x44, Y9, Y12
	Q6K_HALF(0, 128, 4)
	VPERMQ $0xee, Y9, Y12
	Q6K_HALF(64, 160, 132)
	MOVWLZX 208(SI), AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VMULSS (DI), X5, X5
	VBROADCASTSS X5, Y5
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y5, Y11, Y13
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6kBlock
	VPXOR Y12, Y12, Y12
	ROW_STORE(Y13, Y12)
	DECQ R8
	JMP q6kRow
q6kDone:
	VZEROUPPER
	RET

// func q80RowsAVX2(dst *float32, rows int, w, xq *byte, nb int)
//
// Signed × signed through VPSIGNB: |w| times x·sign(w) (x ≠ -128, as ggml's
// quantizer guarantees), VPMADDUBSW, VPMADDWD by ones.
TEXT ·q80RowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ rows+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ xq+24(FP), R10
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
q80Row:
	TESTQ R8, R8
	JZ q80Done
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXOR Y13, Y13, Y13
	VPXOR Y12, Y12, Y12
q80Block:
	VMOVDQU 2(SI), Y0
	VMOVDQU 2(DI), Y1
	VPSIGNB Y0, Y0, Y2
	VPSIGNB Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y2
	VPMADDWD Y15, Y2, Y2
	VCVTDQ2PS Y2, Y2
	MOVWLZX (SI), AX
	MOVWLZX (DI), BX
	SHLL $16, BX
	ORL BX, AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VMOVSHDUP X5, X6
	VMULSS X6, X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS Y5, Y2, Y13
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JNZ q80Block
	ROW_STORE(Y13, Y12)
	DECQ R8
	JMP q80Row
q80Done:
	VZEROUPPER
	RET
