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
