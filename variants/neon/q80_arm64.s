//go:build !noasm

#include "textflag.h"
#include "rows_arm64.h"

// SDOT Vd.4S, Vn.16B, Vm.16B (ARMv8.2 dot product), WORD-encoded:
// 0x4E809400 | m<<16 | n<<5 | d.
#define SDOT_V16_V4_V6 WORD $0x4e869490
#define SDOT_V16_V5_V7 WORD $0x4e8794b0

// func q80RowsNEON(dst *float32, rows int, w, xq *byte, nb int)
//
// Q8_0 × Q8_0, one row and one 34-byte block at a time: two SDOTs give the
// block's int32 dot product in four lanes, ADDV sums them, and the float
// sum takes it times d_w·d_x (fp16 scales widened by FCVTHS).
TEXT ·q80RowsNEON(SB), NOSPLIT, $0-40
	ROWS_ARGS(nb)
	ROW_START
	MOVD R4, R6
	FMOVS ZR, F0
block:
	MOVHU (R2), R7
	MOVHU (R5), R8
	FMOVS R7, F1
	FCVTHS F1, F1
	FMOVS R8, F2
	FCVTHS F2, F2
	FMULS F1, F2, F1
	ADD $2, R2
	ADD $2, R5
	VLD1.P 32(R2), [V4.B16, V5.B16]
	VLD1.P 32(R5), [V6.B16, V7.B16]
	VEOR V16.B16, V16.B16, V16.B16
	SDOT_V16_V4_V6
	SDOT_V16_V5_V7
	VADDV V16.S4, V16
	VMOV V16.S[0], R9
	SCVTFWS R9, F3
	FMADDS F1, F0, F3, F0
	SUBS $1, R6, R6
	BNE block
	ROW_NEXT(F0)
