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
// ALL_LANES clobbers Z0, ALL_LANES_T the register t.
#define ALL_LANES(op, z) ALL_LANES_T(op, z, Z0)
#define ALL_LANES_T(op, z, t) \
	VSHUFF64X2 $0x4e, z, z, t; \
	op t, z, z; \
	VSHUFF64X2 $0xb1, z, z, t; \
	op t, z, z; \
	VPERMILPS $0x4e, z, t; \
	op t, z, z; \
	VPERMILPS $0xb1, z, t; \
	op t, z, z

// ZERO8 zeroes eight vector registers (accumulators that start at zero);
// ZERO_Za_Zb: Za through Zb (ZERO16/ZERO24 of gqa_amd64.h, the VNNI combos
// and sub-block kernels of variants/amx).
#define ZERO8(a, b, c, d, e, f, g, h) \
	VPXORD a, a, a; \
	VPXORD b, b, b; \
	VPXORD c, c, c; \
	VPXORD d, d, d; \
	VPXORD e, e, e; \
	VPXORD f, f, f; \
	VPXORD g, g, g; \
	VPXORD h, h, h

#define ZERO_Z0_Z7 ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
#define ZERO_Z8_Z15 ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
#define ZERO_Z16_Z23 ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
#define ZERO_Z24_Z31 ZERO8(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)

// STORE8Z stores eight zmm registers to the 512 consecutive bytes at base
// (gqa_amd64.h's head stores, variants/amx's SUB_ZERO_ACC).
#define STORE8Z(base, z0, z1, z2, z3, z4, z5, z6, z7) \
	VMOVUPS z0, (base); \
	VMOVUPS z1, 64(base); \
	VMOVUPS z2, 128(base); \
	VMOVUPS z3, 192(base); \
	VMOVUPS z4, 256(base); \
	VMOVUPS z5, 320(base); \
	VMOVUPS z6, 384(base); \
	VMOVUPS z7, 448(base)

// BCAST32 sets every dword lane of z to the constant imm; clobbers AX.
#define BCAST32(imm, z) \
	MOVL $imm, AX; \
	VPBROADCASTD AX, z

// QUANT_START opens an activation quantizer, func(dst *byte, x *float32,
// nb int): DI dst, SI x, CX blocks, and Z31 the float32 abs mask
// (0x7fffffff); clobbers AX.
#define QUANT_START \
	MOVQ dst+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ nb+16(FP), CX; \
	BCAST32(0x7fffffff, Z31)
