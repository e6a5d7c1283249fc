// Lane masks and reductions shared by the assembly files that include it
// (this package's and variants/amx's).

// K1 = the low min(CX, 16) bits, for CX ≥ 0; clobbers AX, CX.
#define MASK16_CX \
	MOVQ $16, AX; \
	CMPQ CX, AX; \
	CMOVQGT AX, CX; \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K1

// K1 = the low min(max(cnt, 0), 16) bits; clobbers AX, CX.
#define MASK16(cnt) \
	MOVQ cnt, CX; \
	XORQ AX, AX; \
	TESTQ CX, CX; \
	CMOVQLT AX, CX; \
	MASK16_CX

// Every lane of z = op over z's 16 lanes (op: VMAXPS, VADDPS, ...);
// clobbers Z0.
#define ALL_LANES(op, z) \
	VSHUFF64X2 $0x4e, z, z, Z0; \
	op Z0, z, z; \
	VSHUFF64X2 $0xb1, z, z, Z0; \
	op Z0, z, z; \
	VPERMILPS $0x4e, z, Z0; \
	op Z0, z, z; \
	VPERMILPS $0xb1, z, Z0; \
	op Z0, z, z

// Zero eight vector registers, ZERO_Za_Zb: Za through Zb (accumulators
// that start at zero; ZERO16/ZERO24 of gqa_amd64.h, the VNNI combos of
// variants/amx).
#define ZERO_Z0_Z7 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7

#define ZERO_Z8_Z15 \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

#define ZERO_Z16_Z23 \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

#define ZERO_Z24_Z31 \
	VPXORD Z24, Z24, Z24; \
	VPXORD Z25, Z25, Z25; \
	VPXORD Z26, Z26, Z26; \
	VPXORD Z27, Z27, Z27; \
	VPXORD Z28, Z28, Z28; \
	VPXORD Z29, Z29, Z29; \
	VPXORD Z30, Z30, Z30; \
	VPXORD Z31, Z31, Z31
