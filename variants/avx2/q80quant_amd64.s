//go:build !noasm

#include "textflag.h"

// Q8_0 activation quantizer for AVX2 (+F16C), byte for byte as ggml's
// quantize_row_q8_0_ref for input without NaNs, the AVX-512 quantizer's
// arithmetic (variants/avx512/q80quant_amd64.s) on 256-bit vectors: per 32
// values, d = amax/127 (VDIVSS, as C), stored as fp16 by VCVTPS2PH
// (round-to-nearest-even, as ggml's conversion), id = 1/d or 0, quants
// roundf(x·id) by truncate-and-correct (±1 where the dropped fraction is at
// least one half), then each int32's low byte (C's conversion to int8_t) by a mask and two
// unsigned packs, and a VPERMD that undoes the packs' lane order.
//
// Register plan: Y0-Y3 values, Y4-Y7 scratch, X8 amax and d, Y9 id,
// Y11 the VPERMD order, Y12 one, Y13 one half, Y14 sign mask, Y15 abs mask.

DATA q80order<>+0(SB)/4, $0
DATA q80order<>+4(SB)/4, $4
DATA q80order<>+8(SB)/4, $1
DATA q80order<>+12(SB)/4, $5
DATA q80order<>+16(SB)/4, $2
DATA q80order<>+20(SB)/4, $6
DATA q80order<>+24(SB)/4, $3
DATA q80order<>+28(SB)/4, $7
GLOBL q80order<>(SB), RODATA|NOPTR, $32

DATA q80lowbyte<>+0(SB)/8, $0x000000ff000000ff
DATA q80lowbyte<>+8(SB)/8, $0x000000ff000000ff
DATA q80lowbyte<>+16(SB)/8, $0x000000ff000000ff
DATA q80lowbyte<>+24(SB)/8, $0x000000ff000000ff
GLOBL q80lowbyte<>(SB), RODATA|NOPTR, $32


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
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x80000000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x3f000000, AX // 0.5
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x3f800000, AX // 1.0
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VMOVDQU q80order<>(SB), Y11
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X10
	TESTQ CX, CX
	JZ    done

block:
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
	JZ      quants // d = 0: id = 0
	VMOVAPS X12, X9 // 1.0
	VDIVSS  X8, X9, X9
	VBROADCASTSS X9, Y9

quants:
	ROUND8(Y0, Y0)
	ROUND8(Y1, Y1)
	ROUND8(Y2, Y2)
	ROUND8(Y3, Y3)
	VPAND     q80lowbyte<>(SB), Y0, Y0 // each int32's low byte, as C's
	VPAND     q80lowbyte<>(SB), Y1, Y1 // conversion to int8_t keeps it
	VPAND     q80lowbyte<>(SB), Y2, Y2 // (0x80000000 from an infinite
	VPAND     q80lowbyte<>(SB), Y3, Y3 // x·id gives 0, not -128)
	VPACKUSDW Y1, Y0, Y0 // per lane: words of 0-3 of Y0, Y1 | 4-7 of each
	VPACKUSDW Y3, Y2, Y2
	VPACKUSWB Y2, Y0, Y0 // per lane: bytes of Y0 0-3, Y1 0-3, Y2 0-3, Y3 0-3 | 4-7
	VPERMD    Y0, Y11, Y0
	VMOVDQU   Y0, 2(DI)
	ADDQ      $128, SI
	ADDQ      $34, DI
	DECQ      CX
	JNZ       block

done:
	VZEROUPPER
	RET
