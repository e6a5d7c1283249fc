//go:build !noasm

#include "textflag.h"
#include "rows_arm64.h"

// SDOT Vd.4S, Vn.16B, Vm.16B (ARMv8.2 dot product), WORD-encoded:
// 0x4E809400 | m<<16 | n<<5 | d. Quants Q_i in V8-V15 times activations
// in V16-V23 into the accumulators V0-V5, V24, V25.
#define SDOT_Q0 WORD $0x4e909500 // SDOT V0.4S, V8.16B, V16.16B
#define SDOT_Q1 WORD $0x4e919521 // SDOT V1.4S, V9.16B, V17.16B
#define SDOT_Q2 WORD $0x4e929542 // SDOT V2.4S, V10.16B, V18.16B
#define SDOT_Q3 WORD $0x4e939563 // SDOT V3.4S, V11.16B, V19.16B
#define SDOT_Q4 WORD $0x4e949584 // SDOT V4.4S, V12.16B, V20.16B
#define SDOT_Q5 WORD $0x4e9595a5 // SDOT V5.4S, V13.16B, V21.16B
#define SDOT_Q6 WORD $0x4e9695d8 // SDOT V24.4S, V14.16B, V22.16B
#define SDOT_Q7 WORD $0x4e9795f9 // SDOT V25.4S, V15.16B, V23.16B

// HIGH_NIBBLES2 ORs the high nibbles of the ql bytes in a and b into the
// quants qa and qb (bits 0-3 under qh's 4-5); clobbers V24, V25.
#define HIGH_NIBBLES2(a, b, qa, qb) \
	VUSHR $4, a, V24.B16; \
	VUSHR $4, b, V25.B16; \
	VORR V24.B16, qa, qa; \
	VORR V25.B16, qb, qb

// One half block (128 values): ql at qloff (64 bytes), qh at qhoff (32),
// activations at yoff, scales at scoff. The 6-bit quants (0..63) are built
// in V8-V15, sixteen values each, and stay unsigned: the -32 offset is
// applied once per block from the bsums.
#define Q6K_HALF(qloff, qhoff, yoff, scoff) \
	ADD $qloff, R2, R7; \
	VLD1 (R7), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	ADD $qhoff, R2, R7; \
	VLD1 (R7), [V4.B16, V5.B16]; \
	ADD $yoff, R5, R7; \
	VLD1.P 64(R7), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1 (R7), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	VSHL $4, V4.B16, V8.B16; \
	VSHL $4, V5.B16, V9.B16; \
	VSHL $2, V4.B16, V10.B16; \
	VSHL $2, V5.B16, V11.B16; \
	VUSHR $2, V4.B16, V14.B16; \
	VUSHR $2, V5.B16, V15.B16; \
	VAND V30.B16, V8.B16, V8.B16; \
	VAND V30.B16, V9.B16, V9.B16; \
	VAND V30.B16, V10.B16, V10.B16; \
	VAND V30.B16, V11.B16, V11.B16; \
	VAND V30.B16, V4.B16, V12.B16; \
	VAND V30.B16, V5.B16, V13.B16; \
	VAND V30.B16, V14.B16, V14.B16; \
	VAND V30.B16, V15.B16, V15.B16; \
	HIGH_NIBBLES2(V0.B16, V1.B16, V12.B16, V13.B16); \
	HIGH_NIBBLES2(V2.B16, V3.B16, V14.B16, V15.B16); \
	VAND V31.B16, V0.B16, V0.B16; \
	VAND V31.B16, V1.B16, V1.B16; \
	VAND V31.B16, V2.B16, V2.B16; \
	VAND V31.B16, V3.B16, V3.B16; \
	VORR V0.B16, V8.B16, V8.B16; \
	VORR V1.B16, V9.B16, V9.B16; \
	VORR V2.B16, V10.B16, V10.B16; \
	VORR V3.B16, V11.B16, V11.B16; \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	VEOR V4.B16, V4.B16, V4.B16; \
	VEOR V5.B16, V5.B16, V5.B16; \
	VEOR V24.B16, V24.B16, V24.B16; \
	VEOR V25.B16, V25.B16, V25.B16; \
	SDOT_Q0; \
	SDOT_Q1; \
	SDOT_Q2; \
	SDOT_Q3; \
	SDOT_Q4; \
	SDOT_Q5; \
	SDOT_Q6; \
	SDOT_Q7; \
	SCALE(V0, scoff+0); \
	SCALE(V1, scoff+1); \
	SCALE(V2, scoff+2); \
	SCALE(V3, scoff+3); \
	SCALE(V4, scoff+4); \
	SCALE(V5, scoff+5); \
	SCALE(V24, scoff+6); \
	SCALE(V25, scoff+7)

// R20 += (sum of acc's lanes) · the int8 scale at off(R2).
#define SCALE(acc, off) \
	VADDV acc.S4, acc; \
	VMOV acc.S[0], R9; \
	MOVB off(R2), R11; \
	MADDW R11, R20, R9, R20

// R21 += scale_j · bsum_j.
#define OFFSET(j) \
	MOVH (260+2*j)(R5), R9; \
	MOVB (192+j)(R2), R11; \
	MADDW R11, R21, R9, R21

// func q6kRowsNEON(dst *float32, rows int, w, xq *byte, nb int)
//
// Q6_K × Q8_K, one row and one super-block at a time: SDOT per 16-value
// sub-block, ADDV, integer MADD by the int8 scale; minus 32·Σ scale·bsum;
// exact per super-block, then scaled by d·dx into the float sum F29.
TEXT ·q6kRowsNEON(SB), NOSPLIT, $0-40
	ROWS_ARGS(nb)
	MOVW $0x0f0f0f0f, R7
	VDUP R7, V31.S4
	MOVW $0x30303030, R7
	VDUP R7, V30.S4
	ROW_START
	MOVD R4, R6
	FMOVS ZR, F29
block:
	MOVW ZR, R20
	MOVW ZR, R21
	Q6K_HALF(0, 128, 4, 192)
	Q6K_HALF(64, 160, 132, 200)
	OFFSET(0)
	OFFSET(1)
	OFFSET(2)
	OFFSET(3)
	OFFSET(4)
	OFFSET(5)
	OFFSET(6)
	OFFSET(7)
	OFFSET(8)
	OFFSET(9)
	OFFSET(10)
	OFFSET(11)
	OFFSET(12)
	OFFSET(13)
	OFFSET(14)
	OFFSET(15)
	SUBW R21<<5, R20, R20
	FMOVS (R5), F4
	MOVHU 208(R2), R7
	FMOVS R7, F1
	FCVTHS F1, F1
	FMULS F4, F1, F1
	SCVTFWS R20, F3
	FMADDS F1, F29, F3, F29
	ADD $210, R2
	ADD $292, R5
	SUBS $1, R6, R6
	BNE block
	ROW_NEXT(F29)
