//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// Q8_0 activation quantizer, byte for byte as ggml's quantize_row_q8_0_ref
// for input without NaNs: per 32 values, d = amax/127 (VDIVSS, as C), stored
// as fp16 by VCVTPS2PH with round-to-nearest-even (ggml's conversion rounds
// the same way), id = 1/d or 0, and quants roundf(x·id): truncate, then add
// ±1 where the dropped fraction is at least one half (half away from zero),
// then a truncating VPMOVDB as C's float-to-int8_t.
//
// Register plan: Z0/Z1 values, Z2/Z3 scratch, Z4 id, Z5-Z7 rounding,
// Z26 one, Z27 one half, Z28 sign mask, Z29 127.0, Z31 abs mask.

#define ROUND_STORE(src, off) \
	VMULPS Z4, src, Z5; \
	VRNDSCALEPS $3, Z5, Z6; \
	VSUBPS Z6, Z5, Z7; \
	VANDPS Z31, Z7, Z7; \
	VCMPPS $13, Z27, Z7, K2; \
	VANDPS Z28, Z5, Z7; \
	VORPS Z26, Z7, Z7; \
	VADDPS Z7, Z6, K2, Z6; \
	VCVTTPS2DQ Z6, Z6; \
	VPMOVDB Z6, off(DI)

// func q80QuantizeAVX512(dst *byte, x *float32, nb int)
TEXT ·q80QuantizeAVX512(SB), NOSPLIT, $0-24
	QUANT_START
	BCAST32(0x80000000, Z28)
	BCAST32(0x3f000000, Z27) // 0.5
	BCAST32(0x3f800000, Z26) // 1.0
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X29
block:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VANDPS Z31, Z0, Z2
	VANDPS Z31, Z1, Z3
	VMAXPS Z3, Z2, Z2
	ALL_LANES_T(VMAXPS, Z2, Z3)
	VDIVSS X29, X2, X2 // d = amax/127
	VCVTPS2PH $0, X2, X3
	VMOVD X3, AX
	MOVW AX, (DI)
	VPXORD Z4, Z4, Z4
	VMOVD X2, AX
	TESTL AX, AX
	JZ quants // d = 0: id = 0
	VMOVAPS X26, X4 // 1.0
	VDIVSS X2, X4, X4
	VBROADCASTSS X4, Z4
quants:
	ROUND_STORE(Z0, 2)
	ROUND_STORE(Z1, 18)
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET
