//go:build !noasm

#include "textflag.h"
#include "rows_arm64.h"

// Vector FADD and FADDP (4S), which Go's assembler lacks; encodings from
// GNU as.
#define FADD_V0_V0_V1 WORD $0x4e21d400
#define FADD_V2_V2_V3 WORD $0x4e23d442
#define FADD_V0_V0_V2 WORD $0x4e22d400
#define FADDP_V0_V0_V0 WORD $0x6e20d400

// func f32RowsNEON(dst *float32, rows int, w, xq *byte, k int)
//
// Float32 matrix-vector product, one row at a time: four FMLA accumulators
// over 16 values per step, a scalar FMADD tail, FADD/FADDP to reduce.
TEXT ·f32RowsNEON(SB), NOSPLIT, $0-40
	ROWS_ARGS(k)
	ROW_START
	LSR $4, R4, R6
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	CBZ R6, reduce
main:
	VLD1.P 64(R2), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R5), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA V16.S4, V4.S4, V0.S4
	VFMLA V17.S4, V5.S4, V1.S4
	VFMLA V18.S4, V6.S4, V2.S4
	VFMLA V19.S4, V7.S4, V3.S4
	SUBS $1, R6, R6
	BNE main
reduce:
	FADD_V0_V0_V1
	FADD_V2_V2_V3
	FADD_V0_V0_V2
	FADDP_V0_V0_V0
	FADDP_V0_V0_V0
	AND $15, R4, R6
	CBZ R6, store
tail:
	FMOVS.P 4(R2), F4
	FMOVS.P 4(R5), F5
	FMADDS F4, F0, F5, F0
	SUBS $1, R6, R6
	BNE tail
store:
	ROW_NEXT(F0)
