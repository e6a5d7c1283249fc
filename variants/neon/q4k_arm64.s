//go:build !noasm

#include "textflag.h"
#include "rows_arm64.h"

// SDOT Vd.4S, Vn.16B, Vm.16B (ARMv8.2 dot product), WORD-encoded:
// 0x4E809400 | m<<16 | n<<5 | d.
#define SDOT_V16_V0_V4 WORD $0x4e849410
#define SDOT_V16_V1_V5 WORD $0x4e859430
#define SDOT_V17_V2_V6 WORD $0x4e869451
#define SDOT_V17_V3_V7 WORD $0x4e879471

// One 32-byte chunk c of a Q4_K block: low nibbles × y[64c:64c+32],
// high × y[64c+32:64c+64], each sum times its sub-block scale into R20.
// The nibbles (0..15) are non-negative, so signed SDOT serves.
#define Q4K_CHUNK(qoff, yoff, sh) \
	ADD $qoff, R2, R7; \
	VLD1 (R7), [V0.B16, V1.B16]; \
	ADD $yoff, R5, R8; \
	VLD1 (R8), [V4.B16, V5.B16, V6.B16, V7.B16]; \
	VUSHR $4, V0.B16, V2.B16; \
	VUSHR $4, V1.B16, V3.B16; \
	VAND V31.B16, V0.B16, V0.B16; \
	VAND V31.B16, V1.B16, V1.B16; \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	SDOT_V16_V0_V4; \
	SDOT_V16_V1_V5; \
	SDOT_V17_V2_V6; \
	SDOT_V17_V3_V7; \
	VADDV V16.S4, V16; \
	VADDV V17.S4, V17; \
	VMOV V16.S[0], R9; \
	VMOV V17.S[0], R10; \
	UBFX $sh, R13, $8, R11; \
	MADDW R11, R20, R9, R20; \
	UBFX $(sh+8), R13, $8, R11; \
	MADDW R11, R20, R10, R20

// m_j · (bsum[2j] + bsum[2j+1]) into R21.
#define Q4K_MIN(j) \
	MOVW (260+4*j)(R5), R9; \
	SBFX $0, R9, $16, R10; \
	ASRW $16, R9, R9; \
	ADDW R10, R9, R9; \
	UBFX $(8*j), R14, $8, R11; \
	MADDW R11, R21, R9, R21

// func q4kRowsNEON(dst *float32, rows int, w, xq *byte, nb int)
//
// Q4_K × Q8_K, one row and one super-block at a time. The 6-bit scales and
// mins are unpacked four at a time in 32-bit registers; the products are
// SDOTs summed per sub-block by ADDV and weighted by integer MADD, exact per
// super-block; then scaled by d·dx and dmin·dx into the float sum F30
// (not F0: that is V0, a data register here).
TEXT ·q4kRowsNEON(SB), NOSPLIT, $0-40
	ROWS_ARGS(nb)
	MOVW $0x0f0f0f0f, R7
	VDUP R7, V31.S4
	ROW_START
	MOVD R4, R6
	FMOVS ZR, F30
block:
	// scales (R13) and mins (R14), eight bytes each
	MOVWU 4(R2), R10
	MOVWU 8(R2), R11
	MOVWU 12(R2), R12
	ANDW $0x3f3f3f3f, R10, R13
	LSRW $2, R10, R15
	ANDW $0x30303030, R15, R15
	ANDW $0x0f0f0f0f, R12, R16
	ORRW R15, R16, R16
	ORR R16<<32, R13, R13
	ANDW $0x3f3f3f3f, R11, R14
	LSRW $2, R11, R15
	ANDW $0x30303030, R15, R15
	LSRW $4, R12, R16
	ANDW $0x0f0f0f0f, R16, R16
	ORRW R15, R16, R16
	ORR R16<<32, R14, R14
	MOVW ZR, R20
	MOVW ZR, R21
	Q4K_CHUNK(16, 4, 0)
	Q4K_CHUNK(48, 68, 16)
	Q4K_CHUNK(80, 132, 32)
	Q4K_CHUNK(112, 196, 48)
	Q4K_MIN(0)
	Q4K_MIN(1)
	Q4K_MIN(2)
	Q4K_MIN(3)
	Q4K_MIN(4)
	Q4K_MIN(5)
	Q4K_MIN(6)
	Q4K_MIN(7)
	// d·dx, dmin·dx
	FMOVS (R5), F4
	MOVHU (R2), R7
	FMOVS R7, F1
	FCVTHS F1, F1
	FMULS F4, F1, F1
	MOVHU 2(R2), R7
	FMOVS R7, F2
	FCVTHS F2, F2
	FMULS F4, F2, F2
	SCVTFWS R20, F3
	FMADDS F1, F30, F3, F30
	SCVTFWS R21, F3
	FMSUBS F2, F30, F3, F30
	ADD $144, R2
	ADD $292, R5
	SUBS $1, R6, R6
	BNE block
	ROW_NEXT(F30)
