// Loops shared by the kernels of kernels_amd64.s. Their labels are
// function-scoped: one use per TEXT.

// ACC12_LOOP runs CX iterations of op Z13, Z12, Zi into the 12 independent
// accumulators Z0-Z11, which start at zero (ZERO_Z0_Z7 from
// variants/avx512/lanes_amd64.h).
#define ACC12_LOOP(op) \
	ZERO_Z0_Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	TESTQ CX, CX; \
	JZ    accdone; \
accloop: \
	op Z13, Z12, Z0; \
	op Z13, Z12, Z1; \
	op Z13, Z12, Z2; \
	op Z13, Z12, Z3; \
	op Z13, Z12, Z4; \
	op Z13, Z12, Z5; \
	op Z13, Z12, Z6; \
	op Z13, Z12, Z7; \
	op Z13, Z12, Z8; \
	op Z13, Z12, Z9; \
	op Z13, Z12, Z10; \
	op Z13, Z12, Z11; \
	DECQ CX; \
	JNZ  accloop; \
accdone:

// AMX_LOOP is the body of a func(cfg *byte, a, b *T, c *U, iters int):
// A tiles tmm4, tmm5 (a, a+1024), B tiles tmm6, tmm7 (b, b+1024),
// accumulators tmm0..tmm3 from zero; each iteration does the four products
// op (C[i][j] += A[i]·B[j]); the accumulators are stored to c (4 tiles ×
// 1 KiB).
#define AMX_LOOP(op) \
	MOVQ cfg+0(FP), AX; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DI; \
	MOVQ c+24(FP), DX; \
	MOVQ iters+32(FP), R8; \
	MOVQ $64, CX; \
	LDTILECFG(AMX_AX); \
	TILELOADD(4, AMX_SI, AMX_CX); \
	ADDQ $1024, SI; \
	TILELOADD(5, AMX_SI, AMX_CX); \
	TILELOADD(6, AMX_DI, AMX_CX); \
	ADDQ $1024, DI; \
	TILELOADD(7, AMX_DI, AMX_CX); \
	TILEZERO(0); \
	TILEZERO(1); \
	TILEZERO(2); \
	TILEZERO(3); \
	TESTQ R8, R8; \
	JZ    amxstore; \
amxloop: \
	op(0, 4, 6); \
	op(1, 4, 7); \
	op(2, 5, 6); \
	op(3, 5, 7); \
	DECQ R8; \
	JNZ  amxloop; \
amxstore: \
	TILESTORED(0, AMX_DX, AMX_CX); \
	ADDQ $1024, DX; \
	TILESTORED(1, AMX_DX, AMX_CX); \
	ADDQ $1024, DX; \
	TILESTORED(2, AMX_DX, AMX_CX); \
	ADDQ $1024, DX; \
	TILESTORED(3, AMX_DX, AMX_CX); \
	TILERELEASE; \
	RET

// ZERO_Z0_Z3 clears the four sweep accumulators.
#define ZERO_Z0_Z3 \
	VPXORQ Z0, Z0, Z0; \
	VPXORQ Z1, Z1, Z1; \
	VPXORQ Z2, Z2, Z2; \
	VPXORQ Z3, Z3, Z3

// SWEEP_SUM adds the four sweep accumulators' uint64 words into AX.
#define SWEEP_SUM \
	VPADDQ Z1, Z0, Z0; \
	VPADDQ Z3, Z2, Z2; \
	VPADDQ Z2, Z0, Z0; \
	VEXTRACTI64X4 $1, Z0, Y1; \
	VPADDQ Y1, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDQ X1, X0, X0; \
	VPSHUFD $0x4e, X0, X1; \
	VPADDQ X1, X0, X0; \
	VMOVQ X0, AX; \
	VZEROUPPER

// READ_SWEEP_PF(op) is readSweep with each 64-byte line prefetched by op
// dist bytes ahead (R11).
#define READ_SWEEP_PF(op) \
	MOVQ p+0(FP), SI; \
	MOVQ n+8(FP), CX; \
	MOVQ dist+16(FP), R11; \
	ADDQ SI, R11; \
	SHRQ $9, CX; \
	ZERO_Z0_Z3; \
	TESTQ CX, CX; \
	JZ    pfdone; \
pfloop: \
	op 0(R11); op 64(R11); op 128(R11); op 192(R11); \
	op 256(R11); op 320(R11); op 384(R11); op 448(R11); \
	VPADDQ 0(SI), Z0, Z0; \
	VPADDQ 64(SI), Z1, Z1; \
	VPADDQ 128(SI), Z2, Z2; \
	VPADDQ 192(SI), Z3, Z3; \
	VPADDQ 256(SI), Z0, Z0; \
	VPADDQ 320(SI), Z1, Z1; \
	VPADDQ 384(SI), Z2, Z2; \
	VPADDQ 448(SI), Z3, Z3; \
	ADDQ   $512, SI; \
	ADDQ   $512, R11; \
	DECQ   CX; \
	JNZ    pfloop; \
pfdone: \
	SWEEP_SUM
