//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// Q8_K activation quantizer, byte for byte as ggml's quantize_row_q8_K_ref
// for finite input. Per 256-value block: the largest magnitude by a VMAXPS
// tree; the first value holding it (it sets the sign of the scale) by
// VCMPPS in order; iscale = -127/max (VDIVSS, as C); quants by ggml's own
// nearest_int (add 1.5·2^23, keep the low mantissa bits, which also gives
// its results for a scale that overflowed to infinity), then MIN(127, v) and
// a truncating VPMOVDB as C's int-to-int8_t. bsums come from VPSADBW over the
// quants biased by 128 (Σ(q+128) over 8 bytes), pairwise added and unbiased.
//
// Register plan: Z0-Z15 |x| then quants, Z16 amax, Z18 iscale, Z20 scratch,
// Z24-Z26 nearest_int constants, Z27 2048, Z28 zero, Z29 0x80 bytes, Z30 127,
// Z31 abs mask.

#define FIND(reg, base) \
	VCMPPS $0, Z16, reg, K1; \
	KMOVW K1, AX; \
	MOVL $base, BX; \
	TESTL AX, AX; \
	JNZ found

#define QUANT(off, reg) \
	VMULPS off(SI), Z18, Z20; \
	VADDPS Z26, Z20, Z20; \
	VPANDD Z25, Z20, Z20; \
	VPSUBD Z24, Z20, Z20; \
	VPMINSD Z30, Z20, Z20; \
	VPMOVDB Z20, reg

// INSERT3 fills lanes 1-3 of z (lane 0 already there) from x1, x2, x3.
#define INSERT3(x1, x2, x3, z) \
	VINSERTI32X4 $1, x1, z, z; \
	VINSERTI32X4 $2, x2, z, z; \
	VINSERTI32X4 $3, x3, z, z

// func q8kQuantizeAVX512(dst *byte, x *float32, nb int)
TEXT ·q8kQuantizeAVX512(SB), NOSPLIT, $0-24
	QUANT_START
	BCAST32(127, Z30)
	BCAST32(0x80808080, Z29)
	VPXORD Z28, Z28, Z28
	BCAST32(2048, Z27)
	BCAST32(0x4b400000, Z26) // 12582912.0 = 1.5·2^23
	BCAST32(0x007fffff, Z25)
	BCAST32(0x00400000, Z24)

block:
	VANDPS 0(SI), Z31, Z0
	VANDPS 64(SI), Z31, Z1
	VANDPS 128(SI), Z31, Z2
	VANDPS 192(SI), Z31, Z3
	VANDPS 256(SI), Z31, Z4
	VANDPS 320(SI), Z31, Z5
	VANDPS 384(SI), Z31, Z6
	VANDPS 448(SI), Z31, Z7
	VANDPS 512(SI), Z31, Z8
	VANDPS 576(SI), Z31, Z9
	VANDPS 640(SI), Z31, Z10
	VANDPS 704(SI), Z31, Z11
	VANDPS 768(SI), Z31, Z12
	VANDPS 832(SI), Z31, Z13
	VANDPS 896(SI), Z31, Z14
	VANDPS 960(SI), Z31, Z15
	VMAXPS Z1, Z0, Z16
	VMAXPS Z3, Z2, Z17
	VMAXPS Z5, Z4, Z18
	VMAXPS Z7, Z6, Z19
	VMAXPS Z9, Z8, Z20
	VMAXPS Z11, Z10, Z21
	VMAXPS Z13, Z12, Z22
	VMAXPS Z15, Z14, Z23
	VMAXPS Z17, Z16, Z16
	VMAXPS Z19, Z18, Z18
	VMAXPS Z21, Z20, Z20
	VMAXPS Z23, Z22, Z22
	VMAXPS Z18, Z16, Z16
	VMAXPS Z22, Z20, Z20
	VMAXPS Z20, Z16, Z16
	ALL_LANES_T(VMAXPS, Z16, Z17)
	VMOVD X16, AX
	TESTL AX, AX
	JZ zero

	FIND(Z0, 0)
	FIND(Z1, 16)
	FIND(Z2, 32)
	FIND(Z3, 48)
	FIND(Z4, 64)
	FIND(Z5, 80)
	FIND(Z6, 96)
	FIND(Z7, 112)
	FIND(Z8, 128)
	FIND(Z9, 144)
	FIND(Z10, 160)
	FIND(Z11, 176)
	FIND(Z12, 192)
	FIND(Z13, 208)
	FIND(Z14, 224)
	FIND(Z15, 240)
	MOVL $1, AX // unreachable for finite input: take value 0
	XORL BX, BX

found:
	BSFL AX, AX
	ADDL BX, AX
	VMOVSS (SI)(AX*4), X17
	MOVL $0xc2fe0000, BX // -127.0
	VMOVD BX, X18
	VDIVSS X17, X18, X18
	MOVL $0x3f800000, BX // 1.0
	VMOVD BX, X19
	VDIVSS X18, X19, X19
	VMOVSS X19, (DI)
	VBROADCASTSS X18, Z18

	QUANT(0, X0)
	QUANT(64, X1)
	QUANT(128, X2)
	QUANT(192, X3)
	QUANT(256, X4)
	QUANT(320, X5)
	QUANT(384, X6)
	QUANT(448, X7)
	QUANT(512, X8)
	QUANT(576, X9)
	QUANT(640, X10)
	QUANT(704, X11)
	QUANT(768, X12)
	QUANT(832, X13)
	QUANT(896, X14)
	QUANT(960, X15)
	INSERT3(X1, X2, X3, Z0)
	INSERT3(X5, X6, X7, Z4)
	INSERT3(X9, X10, X11, Z8)
	INSERT3(X13, X14, X15, Z12)
	VMOVDQU8 Z0, 4(DI)
	VMOVDQU8 Z4, 68(DI)
	VMOVDQU8 Z8, 132(DI)
	VMOVDQU8 Z12, 196(DI)

	// bsums: groups 0-3, 4-7 into Y1 and 8-11, 12-15 into Y3.
	VPXORD Z29, Z0, Z1
	VPSADBW Z28, Z1, Z1
	VPMOVQD Z1, Y1
	VPXORD Z29, Z4, Z2
	VPSADBW Z28, Z2, Z2
	VPMOVQD Z2, Y2
	VPHADDD Y2, Y1, Y1
	VPERMQ $0xd8, Y1, Y1
	VPXORD Z29, Z8, Z3
	VPSADBW Z28, Z3, Z3
	VPMOVQD Z3, Y3
	VPXORD Z29, Z12, Z2
	VPSADBW Z28, Z2, Z2
	VPMOVQD Z2, Y2
	VPHADDD Y2, Y3, Y3
	VPERMQ $0xd8, Y3, Y3
	VINSERTI64X4 $1, Y3, Z1, Z1
	VPSUBD Z27, Z1, Z1
	VPMOVDW Z1, 260(DI)

next:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET

zero:
	VMOVDQU8 Z28, 0(DI)
	VMOVDQU8 Z28, 64(DI)
	VMOVDQU8 Z28, 128(DI)
	VMOVDQU8 Z28, 192(DI)
	VMOVDQU8 Z28, 228(DI)
	JMP next
