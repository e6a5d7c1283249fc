//go:build !noasm

#include "textflag.h"

// Q8_0 × Q8_0 matrix-vector product, one row at a time, two 34-byte blocks
// per 512-bit vector (block a in bytes 0-31, block b in 32-63).
//
// Signed × signed bytes go through the sign trick: |w| (unsigned) times x
// with the sign of w moved onto it (VPMOVB2M + masked VPSUBB), so that
// VPMADDUBSW (or VPDPBUSD) sees unsigned × signed. It needs x ≠ -128, which
// ggml's Q8_0 quantizer guarantees (it rounds x/d with d = amax/127); w may
// be -128 (|-128| = 128 as unsigned). The int32 lanes of block a and b are
// scaled by their d_w·d_x, spread by VPERMPS, into float32 accumulators.
//
// Register plan: Z0/Z1 weights and |w|, Z2 x, Z3 signed x, Z4/Z5 int sums,
// Z6-Z8 scales, Z24 float sum, Z28 zero, Z29 scale spread, Z30 ones (words).

DATA q80Spread<>+0(SB)/8, $0x0000000000000000
DATA q80Spread<>+8(SB)/8, $0x0000000000000000
DATA q80Spread<>+16(SB)/8, $0x0000000000000000
DATA q80Spread<>+24(SB)/8, $0x0000000000000000
DATA q80Spread<>+32(SB)/8, $0x0000000100000001
DATA q80Spread<>+40(SB)/8, $0x0000000100000001
DATA q80Spread<>+48(SB)/8, $0x0000000100000001
DATA q80Spread<>+56(SB)/8, $0x0000000100000001
GLOBL q80Spread<>(SB), RODATA|NOPTR, $64

#define Q80_PROLOGUE \
	MOVQ dst+0(FP), DX; \
	MOVQ rows+8(FP), R8; \
	MOVQ w+16(FP), SI; \
	MOVQ xq+24(FP), R10; \
	VPXORD Z28, Z28, Z28; \
	VMOVDQU64 q80Spread<>(SB), Z29; \
	MOVL $0x00010001, AX; \
	VPBROADCASTD AX, Z30

// |w| into Z1, x signed by w into Z3.
#define Q80_SIGN \
	VPMOVB2M Z0, K1; \
	VPABSB Z0, Z1; \
	VMOVDQA64 Z2, Z3; \
	VPSUBB Z2, Z28, K1, Z3

// Scale the int32 lanes in Z4 by the fp16 scales in AX (w) and BX (x).
#define Q80_SCALE \
	VMOVD AX, X6; \
	VMOVD BX, X7; \
	VCVTPH2PS X6, X6; \
	VCVTPH2PS X7, X7; \
	VMULPS X7, X6, X6; \
	VPERMPS Z6, Z29, Z8; \
	VCVTDQ2PS Z4, Z4; \
	VFMADD231PS Z8, Z4, Z24

// Load blocks a, b of w and x into Z0, Z2 and their scales into AX, BX.
#define Q80_LOAD2 \
	VMOVDQU8 2(SI), Y0; \
	VINSERTI64X4 $1, 36(SI), Z0, Z0; \
	VMOVDQU8 2(DI), Y2; \
	VINSERTI64X4 $1, 36(DI), Z2, Z2; \
	MOVWLZX (SI), AX; \
	MOVWLZX 34(SI), R11; \
	SHLL $16, R11; \
	ORL R11, AX; \
	MOVWLZX (DI), BX; \
	MOVWLZX 34(DI), R11; \
	SHLL $16, R11; \
	ORL R11, BX

// The last block alone (upper half zero, its scale zero).
#define Q80_LOAD1 \
	VMOVDQU8 2(SI), Y0; \
	VMOVDQU8 2(DI), Y2; \
	MOVWLZX (SI), AX; \
	MOVWLZX (DI), BX

#define Q80_ROW_STORE \
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

// Products with AVX-512BW: VPMADDUBSW into words, VPMADDWD by ones.
#define Q80_DOT_BW \
	Q80_SIGN; \
	VPMADDUBSW Z3, Z1, Z4; \
	VPMADDWD Z30, Z4, Z4

// Products with VNNI: VPDPBUSD straight into int32.
#define Q80_DOT_VNNI \
	Q80_SIGN; \
	VPXORD Z4, Z4, Z4; \
	VPDPBUSD Z3, Z1, Z4

#define Q80_BODY(DOT, row, pair, single, store, done) \
row: \
	TESTQ R8, R8; \
	JZ done; \
	MOVQ R10, DI; \
	MOVQ nb+32(FP), CX; \
	VPXORD Z24, Z24, Z24; \
	SHRQ $1, CX; \
	JZ single; \
pair: \
	Q80_LOAD2; \
	DOT; \
	Q80_SCALE; \
	ADDQ $68, SI; \
	ADDQ $68, DI; \
	DECQ CX; \
	JNZ pair; \
single: \
	MOVQ nb+32(FP), CX; \
	ANDQ $1, CX; \
	JZ store; \
	Q80_LOAD1; \
	DOT; \
	Q80_SCALE; \
	ADDQ $34, SI; \
store: \
	Q80_ROW_STORE; \
	DECQ R8; \
	JMP row; \
done: \
	VZEROUPPER; \
	RET

// func q80RowsAVX512(dst *float32, rows int, w, xq *byte, nb int)
TEXT ·q80RowsAVX512(SB), NOSPLIT, $0-40
	Q80_PROLOGUE
	Q80_BODY(Q80_DOT_BW, q80Row, q80Pair, q80Single, q80Store, q80Done)

// func q80RowsVNNI(dst *float32, rows int, w, xq *byte, nb int)
TEXT ·q80RowsVNNI(SB), NOSPLIT, $0-40
	Q80_PROLOGUE
	Q80_BODY(Q80_DOT_VNNI, vq80Row, vq80Pair, vq80Single, vq80Store, vq80Done)
