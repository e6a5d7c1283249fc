//go:build !noasm

#include "textflag.h"

// Q4_K × Q8_K matrix-vector product over activations laid out once per call
// for this kernel (see layoutQ8K): each super-block's 256 quants are four
// 64-byte vectors already paired with the weight nibble vectors, followed by
// the 16 bsums and d, 320 bytes in all. The activation products then take
// their operand straight from memory (no per-row VINSERTI64X4), and the
// 6-bit scales and mins are unpacked in an XMM register (no scalar
// shifting, no GPR→vector broadcast): X1 = [s0-s3, m0-m3, s4-s7, m4-m7].
//
// Register plan: Z4/Z5 int accumulators, Z10-Z13 quants and products,
// Z16-Z19 scale words, Z20 the unpacked scales in every 128-bit lane, Y21
// mins, X6/X7 d and dmin, Z22 dmin·dx, Z23 d·dx, Z24 float sum, Z25 float
// mins sum; constants Z31 (0x0f bytes), Z27-Z30 scale indices, Y26 min
// indices, X15 shift counts, X14 select mask, X13... see prologue.

DATA q4kxScaleIdx<>+0(SB)/8, $0x8000800080008000
DATA q4kxScaleIdx<>+8(SB)/8, $0x8000800080008000
DATA q4kxScaleIdx<>+16(SB)/8, $0x8000800080008000
DATA q4kxScaleIdx<>+24(SB)/8, $0x8000800080008000
DATA q4kxScaleIdx<>+32(SB)/8, $0x8002800280028002
DATA q4kxScaleIdx<>+40(SB)/8, $0x8002800280028002
DATA q4kxScaleIdx<>+48(SB)/8, $0x8002800280028002
DATA q4kxScaleIdx<>+56(SB)/8, $0x8002800280028002
DATA q4kxScaleIdx<>+64(SB)/8, $0x8001800180018001
DATA q4kxScaleIdx<>+72(SB)/8, $0x8001800180018001
DATA q4kxScaleIdx<>+80(SB)/8, $0x8001800180018001
DATA q4kxScaleIdx<>+88(SB)/8, $0x8001800180018001
DATA q4kxScaleIdx<>+96(SB)/8, $0x8003800380038003
DATA q4kxScaleIdx<>+104(SB)/8, $0x8003800380038003
DATA q4kxScaleIdx<>+112(SB)/8, $0x8003800380038003
DATA q4kxScaleIdx<>+120(SB)/8, $0x8003800380038003
DATA q4kxScaleIdx<>+128(SB)/8, $0x8008800880088008
DATA q4kxScaleIdx<>+136(SB)/8, $0x8008800880088008
DATA q4kxScaleIdx<>+144(SB)/8, $0x8008800880088008
DATA q4kxScaleIdx<>+152(SB)/8, $0x8008800880088008
DATA q4kxScaleIdx<>+160(SB)/8, $0x800a800a800a800a
DATA q4kxScaleIdx<>+168(SB)/8, $0x800a800a800a800a
DATA q4kxScaleIdx<>+176(SB)/8, $0x800a800a800a800a
DATA q4kxScaleIdx<>+184(SB)/8, $0x800a800a800a800a
DATA q4kxScaleIdx<>+192(SB)/8, $0x8009800980098009
DATA q4kxScaleIdx<>+200(SB)/8, $0x8009800980098009
DATA q4kxScaleIdx<>+208(SB)/8, $0x8009800980098009
DATA q4kxScaleIdx<>+216(SB)/8, $0x8009800980098009
DATA q4kxScaleIdx<>+224(SB)/8, $0x800b800b800b800b
DATA q4kxScaleIdx<>+232(SB)/8, $0x800b800b800b800b
DATA q4kxScaleIdx<>+240(SB)/8, $0x800b800b800b800b
DATA q4kxScaleIdx<>+248(SB)/8, $0x800b800b800b800b
GLOBL q4kxScaleIdx<>(SB), RODATA|NOPTR, $256

// Mins m0-m3 at bytes 4-7, m4-m7 at bytes 12-15, each to two words.
DATA q4kxMinIdx<>+0(SB)/8, $0x8005800580048004
DATA q4kxMinIdx<>+8(SB)/8, $0x8007800780068006
DATA q4kxMinIdx<>+16(SB)/8, $0x800d800d800c800c
DATA q4kxMinIdx<>+24(SB)/8, $0x800f800f800e800e
GLOBL q4kxMinIdx<>(SB), RODATA|NOPTR, $32

// Per-dword shift counts for [A, B, C, C]: the last lane's high nibbles.
DATA q4kxShift<>+0(SB)/8, $0
DATA q4kxShift<>+8(SB)/8, $0x0000000400000000
GLOBL q4kxShift<>(SB), RODATA|NOPTR, $16

// Select mask: lanes 0-1 take the low six bits of A and B, lanes 2-3 the
// nibbles of C; the rest of each byte comes from the shifted high bits.
DATA q4kxSel<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA q4kxSel<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q4kxSel<>(SB), RODATA|NOPTR, $16

// func q4kRowsVNNIX(dst *float32, rows int, w, xa *byte, nb int)
TEXT ·q4kRowsVNNIX(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ rows+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ xa+24(FP), R10
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x3f3f3f3f, AX
	VPBROADCASTD AX, X9
	VMOVDQU64 q4kxScaleIdx<>+0(SB), Z30
	VMOVDQU64 q4kxScaleIdx<>+64(SB), Z29
	VMOVDQU64 q4kxScaleIdx<>+128(SB), Z28
	VMOVDQU64 q4kxScaleIdx<>+192(SB), Z27
	VMOVDQU64 q4kxMinIdx<>+0(SB), Y26
	VMOVDQU q4kxShift<>+0(SB), X15
	VMOVDQU q4kxSel<>+0(SB), X14

xq4kRow:
	TESTQ R8, R8
	JZ xq4kDone
	MOVQ R10, DI
	MOVQ nb+32(FP), CX
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25

xq4kBlock:
	// Scales and mins: from the dwords A, B, C at 4(SI),
	// [A&63, B&63, C&15 | (A>>6&3)<<4, C>>4&15 | (B>>6&3)<<4].
	VMOVDQU 4(SI), X0
	VPSHUFD $0xa4, X0, X1
	VPSRLVD X15, X1, X1
	VPSHUFD $0x44, X0, X2
	VPSRLD $2, X2, X2
	VPTERNLOGD $0xe4, X14, X2, X1
	VPANDD X9, X1, X1
	VSHUFI64X2 $0, Z1, Z1, Z20

	// Mins times bsums into Y21 (int32), then float.
	VPSHUFB Y26, Y20, Y21
	VPMADDWD 256(DI), Y21, Y21
	VCVTDQ2PS Y21, Y21

	// d·dx into Z23, dmin·dx into Y22; the mins term into Y25.
	VMOVD (SI), X6
	VCVTPH2PS X6, X6
	VMULPS.BCST 288(DI), X6, X6
	VBROADCASTSS X6, Z23
	VMOVSHDUP X6, X7
	VBROADCASTSS X7, Y22
	VFMADD231PS Y22, Y21, Y25

	// Scale words.
	VPSHUFB Z30, Z20, Z16
	VPSHUFB Z29, Z20, Z17
	VPSHUFB Z28, Z20, Z18
	VPSHUFB Z27, Z20, Z19

	// Quants: four nibble vectors times the laid-out activations.
	VMOVDQU8 16(SI), Z10
	VPSRLW $4, Z10, Z11
	VPANDD Z31, Z10, Z10
	VPANDD Z31, Z11, Z11
	VMOVDQU8 80(SI), Z12
	VPSRLW $4, Z12, Z13
	VPANDD Z31, Z12, Z12
	VPANDD Z31, Z13, Z13
	VPMADDUBSW (DI), Z10, Z10
	VPMADDUBSW 64(DI), Z11, Z11
	VPMADDUBSW 128(DI), Z12, Z12
	VPMADDUBSW 192(DI), Z13, Z13
	VPMADDWD Z16, Z10, Z4
	VPMADDWD Z17, Z11, Z5
	VPDPWSSD Z18, Z12, Z4
	VPDPWSSD Z19, Z13, Z5
	VPADDD Z5, Z4, Z4
	VCVTDQ2PS Z4, Z4
	VFMADD231PS Z23, Z4, Z24
	ADDQ $144, SI
	ADDQ $320, DI
	DECQ CX
	JNZ xq4kBlock

	VSUBPS Z25, Z24, Z6
	VEXTRACTF64X4 $1, Z6, Y7
	VADDPS Y7, Y6, Y6
	VEXTRACTF128 $1, Y6, X7
	VADDPS X7, X6, X6
	VPSHUFD $0x4e, X6, X7
	VADDPS X7, X6, X6
	VPSHUFD $0xb1, X6, X7
	VADDSS X7, X6, X6
	VMOVSS X6, (DX)
	ADDQ $4, DX
	DECQ R8
	JMP xq4kRow

xq4kDone:
	VZEROUPPER
	RET
