//go:build !noasm

#include "textflag.h"

// The activation quantizers for AVX2, Q8_0 (+F16C) and Q8_K, byte for byte
// as ggml's quantize_row_q8_0_ref and quantize_row_q8_K_ref for input
// without NaNs: each is the AVX-512 quantizer's arithmetic (variants/avx512)
// on 256-bit vectors. Both end alike: each int32 quant's low byte (C's
// conversion to int8_t, so an infinite x·id's 0x80000000 gives 0, not the
// -128 of a saturating pack) by a mask, two unsigned packs, and a VPERMD by
// quantorder that undoes the packs' lane order.

DATA quantorder<>+0(SB)/4, $0
DATA quantorder<>+4(SB)/4, $4
DATA quantorder<>+8(SB)/4, $1
DATA quantorder<>+12(SB)/4, $5
DATA quantorder<>+16(SB)/4, $2
DATA quantorder<>+20(SB)/4, $6
DATA quantorder<>+24(SB)/4, $3
DATA quantorder<>+28(SB)/4, $7
GLOBL quantorder<>(SB), RODATA|NOPTR, $32

DATA quantlowbyte<>+0(SB)/8, $0x000000ff000000ff
DATA quantlowbyte<>+8(SB)/8, $0x000000ff000000ff
DATA quantlowbyte<>+16(SB)/8, $0x000000ff000000ff
DATA quantlowbyte<>+24(SB)/8, $0x000000ff000000ff
GLOBL quantlowbyte<>(SB), RODATA|NOPTR, $32

// BCAST sets every dword of y (x its low half) to imm; clobbers AX.
#define BCAST(imm, x, y) \
	MOVL $imm, AX; \
	VMOVD AX, x; \
	VPBROADCASTD x, y

// PACK4 leaves the int32 low bytes in Y0-Y3 (masked already) as 32 bytes
// in order in Y0 (clobbers Y2); Y11 holds quantorder.
#define PACK4 \
	VPACKUSDW Y1, Y0, Y0; \
	VPACKUSDW Y3, Y2, Y2; \
	VPACKUSWB Y2, Y0, Y0; \
	VPERMD Y0, Y11, Y0

// QUANT_ARGS loads DI dst, SI x, CX blocks, Y15 the abs mask and Y11
// quantorder (clobbers AX).
#define QUANT_ARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ nb+16(FP), CX; \
	BCAST(0x7fffffff, X15, Y15); \
	VMOVDQU quantorder<>(SB), Y11

// ---- Q8_0: per 32 values, d = amax/127 (VDIVSS, as C), stored as fp16 by
// VCVTPS2PH (round-to-nearest-even, as ggml's conversion), id = 1/d or 0,
// quants roundf(x·id) by truncate-and-correct (±1 where the dropped
// fraction is at least one half).
//
// Register plan: Y0-Y3 values, Y4-Y7 scratch, X8 amax and d, Y9 id, X10
// 127.0, Y11 quantorder, Y12 one, Y13 one half, Y14 sign mask, Y15 abs mask.

// ROUND8 leaves roundf(src·id) as int32 in dst (clobbers Y4-Y7).
#define ROUND8(src, dst) \
	VMULPS     Y9, src, Y4; \
	VROUNDPS   $3, Y4, Y5; \
	VSUBPS     Y5, Y4, Y6; \
	VANDPS     Y15, Y6, Y6; \
	VCMPPS     $13, Y13, Y6, Y6; \
	VANDPS     Y14, Y4, Y7; \
	VORPS      Y12, Y7, Y7; \
	VANDPS     Y6, Y7, Y7; \
	VADDPS     Y7, Y5, Y5; \
	VCVTTPS2DQ Y5, dst

// func q80QuantizeAVX2(dst *byte, x *float32, nb int)
TEXT ·q80QuantizeAVX2(SB), NOSPLIT, $0-24
	QUANT_ARGS
	BCAST(0x80000000, X14, Y14)
	BCAST(0x3f000000, X13, Y13) // 0.5
	BCAST(0x3f800000, X12, Y12) // 1.0
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X10
	TESTQ CX, CX
	JZ    q80done

q80block:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS  Y15, Y0, Y4
	VANDPS  Y15, Y1, Y5
	VANDPS  Y15, Y2, Y6
	VANDPS  Y15, Y3, Y7
	VMAXPS  Y5, Y4, Y4
	VMAXPS  Y7, Y6, Y6
	VMAXPS  Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS  X5, X4, X4
	VPERMILPS $0x4e, X4, X5
	VMAXPS  X5, X4, X4
	VPERMILPS $0xb1, X4, X5
	VMAXPS  X5, X4, X8
	VDIVSS  X10, X8, X8 // d = amax/127
	VCVTPS2PH $0, X8, X5
	VMOVD   X5, AX
	MOVW    AX, (DI)
	VXORPS  Y9, Y9, Y9
	VMOVD   X8, AX
	TESTL   AX, AX
	JZ      q80quants // d = 0: id = 0
	VMOVAPS X12, X9 // 1.0
	VDIVSS  X8, X9, X9
	VBROADCASTSS X9, Y9

q80quants:
	ROUND8(Y0, Y0)
	ROUND8(Y1, Y1)
	ROUND8(Y2, Y2)
	ROUND8(Y3, Y3)
	VPAND quantlowbyte<>(SB), Y0, Y0
	VPAND quantlowbyte<>(SB), Y1, Y1
	VPAND quantlowbyte<>(SB), Y2, Y2
	VPAND quantlowbyte<>(SB), Y3, Y3
	PACK4
	VMOVDQU Y0, 2(DI)
	ADDQ    $128, SI
	ADDQ    $34, DI
	DECQ    CX
	JNZ     q80block

q80done:
	VZEROUPPER
	RET

// ---- Q8_K: a block's 256 values do not fit sixteen YMM registers, so each
// block is read three times from L1: the largest magnitude by a VMAXPS tree
// over four accumulators; the first value holding it (it sets the sign of
// the scale) by VCMPPS in order; iscale = -127/max (VDIVSS, as C); then the
// quants by ggml's own nearest_int (add 1.5·2^23, keep the low mantissa
// bits, which also gives its results for a scale that overflowed to
// infinity) and MIN(127, v). bsums come from VPSADBW over the stored quants
// biased by 128 (Σ(q+128) over 8 bytes), gathered by two VPHADDDs and the
// VPERMD by quantorder, unbiased, and packed to int16.
//
// Register plan: Y0-Y3 work, Y4 2048, Y5 zero, Y6 0x80 bytes, Y7 127, Y8
// amax, Y9 iscale, Y10 0x400000, Y11 quantorder, Y12 0x7fffff, Y13
// 1.5·2^23, Y14 the low-byte mask, Y15 the abs mask.

// AMAX4 folds the magnitudes of 32 values at off into Y0-Y3.
#define AMAX4(off) \
	VANDPS off(SI), Y15, Y8; \
	VMAXPS Y8, Y0, Y0; \
	VANDPS off+32(SI), Y15, Y9; \
	VMAXPS Y9, Y1, Y1; \
	VANDPS off+64(SI), Y15, Y8; \
	VMAXPS Y8, Y2, Y2; \
	VANDPS off+96(SI), Y15, Y9; \
	VMAXPS Y9, Y3, Y3

// Q8 leaves MIN(127, nearest_int(iscale·x)) of 8 values at off, low byte
// only, as int32 in y.
#define Q8(off, y) \
	VMULPS off(SI), Y9, y; \
	VADDPS Y13, y, y; \
	VPAND Y12, y, y; \
	VPSUBD Y10, y, y; \
	VPMINSD Y7, y, y; \
	VPAND Y14, y, y

// Q32 stores the quants of the 32 values at off as the block's bytes
// 4+off/4 onwards.
#define Q32(off) \
	Q8(off, Y0); \
	Q8(off+32, Y1); \
	Q8(off+64, Y2); \
	Q8(off+96, Y3); \
	PACK4; \
	VMOVDQU Y0, 4+off/4(DI)

// SAD leaves Σ(q+128) over each 8 of the 32 quants at off as 4 qwords in y.
#define SAD(off, y) \
	VPXOR off(DI), Y6, y; \
	VPSADBW Y5, y, y

// BSUMS8 leaves the sums of the 8 groups of 16 quants from off in y, in
// order, biased by 2048 (clobbers Y2, Y3).
#define BSUMS8(off, y) \
	SAD(off, y); \
	SAD(off+32, Y2); \
	VPHADDD Y2, y, y; \
	SAD(off+64, Y2); \
	SAD(off+96, Y3); \
	VPHADDD Y3, Y2, Y2; \
	VPHADDD Y2, y, y; \
	VPERMD y, Y11, y

// func q8kQuantizeAVX2(dst *byte, x *float32, nb int)
TEXT ·q8kQuantizeAVX2(SB), NOSPLIT, $0-24
	QUANT_ARGS
	BCAST(0x4b400000, X13, Y13) // 12582912.0 = 1.5·2^23
	BCAST(0x007fffff, X12, Y12)
	BCAST(0x00400000, X10, Y10)
	BCAST(127, X7, Y7)
	BCAST(0x000000ff, X14, Y14)
	BCAST(0x80808080, X6, Y6)
	BCAST(2048, X4, Y4)
	VPXOR Y5, Y5, Y5
	TESTQ CX, CX
	JZ    q8kdone

q8kblock:
	VANDPS (SI), Y15, Y0
	VANDPS 32(SI), Y15, Y1
	VANDPS 64(SI), Y15, Y2
	VANDPS 96(SI), Y15, Y3
	AMAX4(128)
	AMAX4(256)
	AMAX4(384)
	AMAX4(512)
	AMAX4(640)
	AMAX4(768)
	AMAX4(896)
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VMOVD X0, AX
	TESTL AX, AX
	JZ    q8kzero
	VBROADCASTSS X0, Y8

	// The first value whose magnitude is amax, 8 at a time.
	XORQ BX, BX

q8kfind:
	VANDPS (SI)(BX*1), Y15, Y0
	VCMPPS $0, Y8, Y0, Y0
	VMOVMSKPS Y0, AX
	TESTL AX, AX
	JNZ   q8kfound
	ADDQ  $32, BX
	CMPQ  BX, $1024
	JB    q8kfind
	MOVL  $1, AX // unreachable for finite input: take value 0
	XORQ  BX, BX

q8kfound:
	BSFL AX, AX
	LEAQ (SI)(BX*1), DX
	VMOVSS (DX)(AX*4), X0
	MOVL $0xc2fe0000, AX // -127.0
	VMOVD AX, X9
	VDIVSS X0, X9, X9 // iscale = -127/max
	MOVL $0x3f800000, AX // 1.0
	VMOVD AX, X1
	VDIVSS X9, X1, X1 // d = 1/iscale
	VMOVSS X1, (DI)
	VBROADCASTSS X9, Y9

	Q32(0)
	Q32(128)
	Q32(256)
	Q32(384)
	Q32(512)
	Q32(640)
	Q32(768)
	Q32(896)

	BSUMS8(4, Y0)
	BSUMS8(132, Y1)
	VPSUBD Y4, Y0, Y0
	VPSUBD Y4, Y1, Y1
	VPACKSSDW Y1, Y0, Y0 // per lane: groups 0-3, 8-11 | 4-7, 12-15
	VPERMQ $0xd8, Y0, Y0
	VMOVDQU Y0, 260(DI)

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q8kblock

q8kdone:
	VZEROUPPER
	RET

q8kzero: // d, quants and bsums all zero (ggml leaves the bsums unwritten)
	VMOVDQU Y5, 0(DI)
	VMOVDQU Y5, 32(DI)
	VMOVDQU Y5, 64(DI)
	VMOVDQU Y5, 96(DI)
	VMOVDQU Y5, 128(DI)
	VMOVDQU Y5, 160(DI)
	VMOVDQU Y5, 192(DI)
	VMOVDQU Y5, 224(DI)
	VMOVDQU Y5, 256(DI)
	VMOVDQU Y5, 260(DI)
	JMP q8knext
