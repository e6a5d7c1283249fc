// Shared by the interleaved-layout kernels of this package (r16_amd64.s,
// q40r16_amd64.s).

// R2_GROUPS runs block (one block of weights; it steps SI, R11 and R8)
// nb (CX) times for each of the groups (R9) of 16 rows, activations from
// DI, storing each group's 16 float sums (Y0: rows 0-7, Y1: 8-15) at DX
// onwards; grp and blk name its labels.
#define R2_GROUPS(grp, blk, block) \
grp: \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	MOVQ   DI, R8; \
	MOVQ   CX, R10; \
blk: \
	block; \
	DECQ R10; \
	JNZ  blk; \
	VMOVUPS Y0, (DX); \
	VMOVUPS Y1, 32(DX); \
	ADDQ    $64, DX; \
	DECQ    R9; \
	JNZ     grp

// R2_ARGS loads w, x, dst, nb, groups, dist into SI, DI, DX, CX, R9 and
// R11, Y15 with 0x0f bytes, and jumps to done when there is nothing to do.
#define R2_ARGS \
	MOVQ w+0(FP), SI; MOVQ x+8(FP), DI; MOVQ dst+16(FP), DX; \
	MOVQ nb+24(FP), CX; MOVQ groups+32(FP), R9; \
	MOVQ dist+40(FP), R11; \
	MOVL $0x0f0f0f0f, AX; VMOVD AX, X15; VPBROADCASTD X15, Y15; \
	TESTQ R9, R9; JZ done; \
	TESTQ CX, CX; JZ done

// R2_LOOPS runs the groups through plain (no prefetch) when dist (R11) is
// 0, else through pf with R11 = SI + dist, then returns.
#define R2_LOOPS(plain, pf) \
	TESTQ R11, R11; JNZ pfloop; \
	R2_GROUPS(group, block, plain); \
	JMP done; \
pfloop: \
	ADDQ SI, R11; \
	R2_GROUPS(pgroup, pblock, pf); \
done: \
	VZEROUPPER; \
	RET

// R2_DSCALE converts the int32 sums Y2 (rows 0-7) and Y3 and adds them,
// times the rows' d (f16 at SI) times the token's d (float32 at dx(R8)),
// to the float sums Y0 and Y1; t, a and b are scratch.
#define R2_DSCALE(dx, t, a, b) \
	VCVTDQ2PS    Y2, Y2; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS dx(R8), t; \
	VCVTPH2PS    (SI), a; \
	VCVTPH2PS    16(SI), b; \
	VMULPS       t, a, a; \
	VMULPS       t, b, b; \
	VFMADD231PS  a, Y2, Y0; \
	VFMADD231PS  b, Y3, Y1
