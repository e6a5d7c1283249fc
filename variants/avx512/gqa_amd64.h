// Decode attention's passes over one KV head for four query heads at a
// time, as macro bodies over the load of sixteen cached elements, so that
// the float32 cache (attention_amd64.s) and the 16-bit caches read as
// stored (attentionhalf_amd64.s) run the same program; k and v steps and
// offsets are in bytes of the cache's elements. Include after
// lanes_amd64.h; each TEXT instantiates a body with labels of its own.

// Sixteen elements at off bytes from base, under mask k, as float32 in z:
// float32, F16 (VCVTPH2PS, exact) or BF16 (zero-extended into the high
// half, exact).
#define LOAD_F32(off, base, k, z) VMOVUPS.Z off(base), k, z
#define LOAD_F16(off, base, k, z) VCVTPH2PS.Z off(base), k, z
#define LOAD_BF16(off, base, k, z) \
	VPMOVZXWD.Z off(base), k, z; \
	VPSLLD $16, z, z

// The arguments that the score passes (p, q, k, stride, headDim, n, ...)
// and the weighted sums (out, p, v, stride, headDim, n) load first, the
// single-head kernels of attention_amd64.s too: DI the output, R10 the
// first key or value row, R9 the row stride, and R8 n or BX headDim.
#define SCORES_ARGS \
	MOVQ p+0(FP), DI; \
	MOVQ k+16(FP), R10; \
	MOVQ stride+24(FP), R9; \
	MOVQ n+40(FP), R8
#define WSUM_ARGS \
	MOVQ out+0(FP), DI; \
	MOVQ v+16(FP), R10; \
	MOVQ stride+24(FP), R9; \
	MOVQ headDim+32(FP), BX

// POS_START(q) starts one position's dot products over the head: SI the
// query (argument q at 8(FP)), DX the position's key row (R10), BX headDim
// lanes to go, Z8 the accumulator at zero.
#define POS_START(q) \
	MOVQ q+8(FP), SI; \
	MOVQ R10, DX; \
	MOVQ headDim+32(FP), BX; \
	VPXORD Z8, Z8, Z8

// Reduce the 16 lanes of z to one float, times X10, stored at off(DI).
#define HSUM_SCALE_STORE(z, y, x, off) \
	VEXTRACTF64X4 $1, z, Y1; \
	VADDPS Y1, y, Y1; \
	VEXTRACTF128 $1, Y1, X2; \
	VADDPS X2, X1, X1; \
	VPSHUFD $0x4e, X1, X2; \
	VADDPS X2, X1, X1; \
	VPSHUFD $0xb1, X1, X2; \
	VADDSS X2, X1, X1; \
	VMULSS X10, X1, X1; \
	VMOVSS X1, off

// SCORES4 is attnScores4AVX512's body with the key loads by load; its
// labels are prefixed by pos and lane (unique per TEXT).
#define SCORES4(load, kstep, pos, lane) \
	SCORES_ARGS; \
	VMOVSS scale+48(FP), X10; \
	MOVQ headDim+32(FP), R11; \
	SHLQ $2, R11; \
	MOVQ n+40(FP), R12; \
	SHLQ $2, R12; \
pos: \
	MOVQ q+8(FP), SI; \
	LEAQ (SI)(R11*2), R13; \
	MOVQ R10, DX; \
	MOVQ headDim+32(FP), BX; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
lane: \
	MASK16(BX); \
	load(0, DX, K1, Z0); \
	VMOVUPS.Z (SI), K1, Z3; \
	VMOVUPS.Z (SI)(R11*1), K1, Z4; \
	VMOVUPS.Z (R13), K1, Z5; \
	VMOVUPS.Z (R13)(R11*1), K1, Z6; \
	VFMADD231PS Z0, Z3, Z8; \
	VFMADD231PS Z0, Z4, Z9; \
	VFMADD231PS Z0, Z5, Z11; \
	VFMADD231PS Z0, Z6, Z12; \
	ADDQ $64, SI; \
	ADDQ $64, R13; \
	ADDQ $kstep, DX; \
	SUBQ $16, BX; \
	JG lane; \
	HSUM_SCALE_STORE(Z8, Y8, X8, (DI)); \
	HSUM_SCALE_STORE(Z9, Y9, X9, (DI)(R12*1)); \
	LEAQ (DI)(R12*2), AX; \
	HSUM_SCALE_STORE(Z11, Y11, X11, (AX)); \
	HSUM_SCALE_STORE(Z12, Y12, X12, (AX)(R12*1)); \
	ADDQ $4, DI; \
	ADDQ R9, R10; \
	DECQ R8; \
	JNZ pos; \
	VZEROUPPER; \
	RET



// Zero the sixteen accumulators Z8-Z23.
#define ZERO16 ZERO_Z8_Z15; ZERO_Z16_Z23

// Store one head's 64 output lanes (Z a-d under K1-K4) at AX, step AX.
#define STORE_HEAD(a, b, c, d) \
	VMOVUPS a, K1, (AX); \
	VMOVUPS b, K2, 64(AX); \
	VMOVUPS c, K3, 128(AX); \
	VMOVUPS d, K4, 192(AX); \
	ADDQ R11, AX

// WSUM4 is attnWeightedSum4AVX512's body with the value loads by load;
// block and pos name its labels.
#define WSUM4(load, o1, o2, o3, vstep, block, pos) \
	WSUM_ARGS; \
	MOVQ BX, R11; \
	SHLQ $2, R11; \
	MOVQ n+40(FP), R12; \
	SHLQ $2, R12; \
block: \
	MASK16(BX); \
	KMOVW K1, K5; \
	LEAQ -16(BX), R13; \
	MASK16(R13); \
	KMOVW K1, K2; \
	LEAQ -32(BX), R13; \
	MASK16(R13); \
	KMOVW K1, K3; \
	LEAQ -48(BX), R13; \
	MASK16(R13); \
	KMOVW K1, K4; \
	KMOVW K5, K1; \
	MOVQ p+8(FP), SI; \
	LEAQ (SI)(R12*2), R13; \
	MOVQ R10, DX; \
	MOVQ n+40(FP), R8; \
	ZERO16; \
pos: \
	load(0, DX, K1, Z4); \
	load(o1, DX, K2, Z5); \
	load(o2, DX, K3, Z6); \
	load(o3, DX, K4, Z7); \
	VBROADCASTSS (SI), Z0; \
	VBROADCASTSS (SI)(R12*1), Z1; \
	VBROADCASTSS (R13), Z2; \
	VBROADCASTSS (R13)(R12*1), Z3; \
	FMA4X4(Z0, Z8, Z9, Z10, Z11); \
	FMA4X4(Z1, Z12, Z13, Z14, Z15); \
	FMA4X4(Z2, Z16, Z17, Z18, Z19); \
	FMA4X4(Z3, Z20, Z21, Z22, Z23); \
	ADDQ $4, SI; \
	ADDQ $4, R13; \
	ADDQ R9, DX; \
	DECQ R8; \
	JNZ pos; \
	MOVQ DI, AX; \
	STORE_HEAD(Z8, Z9, Z10, Z11); \
	STORE_HEAD(Z12, Z13, Z14, Z15); \
	STORE_HEAD(Z16, Z17, Z18, Z19); \
	STORE_HEAD(Z20, Z21, Z22, Z23); \
	ADDQ $256, DI; \
	ADDQ $vstep, R10; \
	SUBQ $64, BX; \
	JG block; \
	VZEROUPPER; \
	RET


// The same without a mask (head sizes that are multiples of 16), at addr.
#define LOAD4_F32(addr, z) VMOVUPS addr, z
#define LOAD4_F16(addr, z) VCVTPH2PS addr, z
#define LOAD4_BF16(addr, z) \
	VPMOVZXWD addr, z; \
	VPSLLD $16, z, z

// FOLD_HALVES adds the high 256 bits of a position's accumulator pair into
// the low ones; clobbers Z9.
#define FOLD_HALVES(lo, hi, yhi) \
	VSHUFF64X2 $0xee, hi, lo, Z9; \
	VINSERTF64X4 $1, yhi, lo, lo; \
	VADDPS Z9, lo, lo

// PAIR_SUM(shuf, a, b, dst): dst = shuf's selection 0x88 of a, b plus its
// selection 0xdd (clobbers Z9, Z10), one step of SCORES4X4's transposing
// reduction.
#define PAIR_SUM(shuf, a, b, dst) \
	shuf $0x88, b, a, Z9; \
	shuf $0xdd, b, a, Z10; \
	VADDPS Z10, Z9, dst

// FMA4X4(k, d0, d1, d2, d3): dj += k · the j-th of Z4-Z7 (SCORES4X4's
// products of one key row with the four query rows).
#define FMA4X4(k, d0, d1, d2, d3) \
	VFMADD231PS k, Z4, d0; \
	VFMADD231PS k, Z5, d1; \
	VFMADD231PS k, Z6, d2; \
	VFMADD231PS k, Z7, d3

// SCORES4X4 is attnScores4x4AVX512's body (four heads × four positions
// per pass, reduced by its transposing add tree) with the key loads by
// load; pass, lane and done name its labels.
#define SCORES4X4(load, kstep, pass, lane, done) \
	SCORES_ARGS; \
	SHRQ $2, R8; \
	JZ done; \
	VBROADCASTSS scale+56(FP), Z8; \
	MOVQ headDim+32(FP), R11; \
	SHLQ $2, R11; \
	MOVQ ldp+48(FP), R12; \
	SHLQ $2, R12; \
	LEAQ (R9)(R9*2), R14; \
pass: \
	MOVQ q+8(FP), SI; \
	LEAQ (SI)(R11*2), R13; \
	MOVQ R10, DX; \
	MOVQ headDim+32(FP), BX; \
	ZERO_Z16_Z23; \
	ZERO_Z24_Z31; \
lane: \
	load((DX), Z0); \
	load((DX)(R9*1), Z1); \
	load((DX)(R9*2), Z2); \
	load((DX)(R14*1), Z3); \
	VMOVUPS (SI), Z4; \
	VMOVUPS (SI)(R11*1), Z5; \
	VMOVUPS (R13), Z6; \
	VMOVUPS (R13)(R11*1), Z7; \
	FMA4X4(Z0, Z16, Z17, Z18, Z19); \
	FMA4X4(Z1, Z20, Z21, Z22, Z23); \
	FMA4X4(Z2, Z24, Z25, Z26, Z27); \
	FMA4X4(Z3, Z28, Z29, Z30, Z31); \
	ADDQ $64, SI; \
	ADDQ $64, R13; \
	ADDQ $kstep, DX; \
	SUBQ $16, BX; \
	JG lane; \
	FOLD_HALVES(Z16, Z17, Y17); \
	FOLD_HALVES(Z18, Z19, Y19); \
	FOLD_HALVES(Z20, Z21, Y21); \
	FOLD_HALVES(Z22, Z23, Y23); \
	FOLD_HALVES(Z24, Z25, Y25); \
	FOLD_HALVES(Z26, Z27, Y27); \
	FOLD_HALVES(Z28, Z29, Y29); \
	FOLD_HALVES(Z30, Z31, Y31); \
	PAIR_SUM(VSHUFF64X2, Z16, Z18, Z16); \
	PAIR_SUM(VSHUFF64X2, Z20, Z22, Z20); \
	PAIR_SUM(VSHUFF64X2, Z24, Z26, Z24); \
	PAIR_SUM(VSHUFF64X2, Z28, Z30, Z28); \
	PAIR_SUM(VSHUFPS, Z16, Z20, Z16); \
	PAIR_SUM(VSHUFPS, Z24, Z28, Z24); \
	PAIR_SUM(VSHUFPS, Z16, Z24, Z16); \
	VMULPS Z8, Z16, Z16; \
	VMOVUPS X16, (DI); \
	VEXTRACTF32X4 $1, Z16, (DI)(R12*1); \
	LEAQ (DI)(R12*2), AX; \
	VEXTRACTF32X4 $2, Z16, (AX); \
	VEXTRACTF32X4 $3, Z16, (AX)(R12*1); \
	ADDQ $16, DI; \
	LEAQ (R10)(R9*4), R10; \
	DECQ R8; \
	JNZ pass; \
done: \
	VZEROUPPER; \
	RET



// Zero the 24 accumulators Z8-Z31.
#define ZERO24 ZERO16; ZERO_Z24_Z31

// One 16-value chunk of a row for the three heads: v at addr into z, then
// head j's accumulator aj += p_j · v (p_j broadcast in Z0-Z2).
#define W3CHUNK(load, addr, z, a0, a1, a2) \
	load(addr, z); \
	VFMADD231PS Z0, z, a0; \
	VFMADD231PS Z1, z, a1; \
	VFMADD231PS Z2, z, a2

// Software prefetch at each position of WSUM3W: none, or the block's
// 256 (16-bit) or 512 (float32) bytes of the row R14 bytes ahead.
#define W3PF_NONE
#define W3PF_256 \
	PREFETCHT0 (DX)(R14*1); \
	PREFETCHT0 64(DX)(R14*1); \
	PREFETCHT0 128(DX)(R14*1); \
	PREFETCHT0 192(DX)(R14*1)
#define W3PF_512 \
	W3PF_256; \
	PREFETCHT0 256(DX)(R14*1); \
	PREFETCHT0 320(DX)(R14*1); \
	PREFETCHT0 384(DX)(R14*1); \
	PREFETCHT0 448(DX)(R14*1)

// WSUM3W is the weighted sum of three query heads over one value head
// walking the positions once per 128 values of the head (once for a head
// of 128), where WSUM4 walks them once per 64: out_j = Σ_t p[j·n+t]·v[t]
// for j < 3, 24 accumulators (8 per head) Z8-Z31, the probabilities
// broadcast in Z0-Z2, the values through Z3-Z7. Each output lane sums its
// products in position order with one FMA each, as WSUM4 does: the same
// bits. headDim a multiple of 128; c1-c7 are the byte offsets of a row's
// 16-value chunks, vstep a block's bytes; pf (W3PF_*) prefetches pfdist
// rows ahead. block and pos name its labels.
#define WSUM3W(load, c1, c2, c3, c4, c5, c6, c7, vstep, pf, pfdist, block, pos) \
	WSUM_ARGS; \
	MOVQ BX, R11; \
	SHLQ $2, R11; \
	MOVQ n+40(FP), R12; \
	SHLQ $2, R12; \
	IMUL3Q $pfdist, R9, R14; \
block: \
	MOVQ p+8(FP), SI; \
	MOVQ R10, DX; \
	MOVQ n+40(FP), R8; \
	ZERO24; \
pos: \
	pf; \
	VBROADCASTSS (SI), Z0; \
	VBROADCASTSS (SI)(R12*1), Z1; \
	VBROADCASTSS (SI)(R12*2), Z2; \
	W3CHUNK(load, (DX), Z3, Z8, Z16, Z24); \
	W3CHUNK(load, c1(DX), Z4, Z9, Z17, Z25); \
	W3CHUNK(load, c2(DX), Z5, Z10, Z18, Z26); \
	W3CHUNK(load, c3(DX), Z6, Z11, Z19, Z27); \
	W3CHUNK(load, c4(DX), Z7, Z12, Z20, Z28); \
	W3CHUNK(load, c5(DX), Z3, Z13, Z21, Z29); \
	W3CHUNK(load, c6(DX), Z4, Z14, Z22, Z30); \
	W3CHUNK(load, c7(DX), Z5, Z15, Z23, Z31); \
	ADDQ $4, SI; \
	ADDQ R9, DX; \
	DECQ R8; \
	JNZ pos; \
	STORE8Z(DI, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15); \
	LEAQ (DI)(R11*1), AX; \
	STORE8Z(AX, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23); \
	LEAQ (DI)(R11*2), AX; \
	STORE8Z(AX, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31); \
	ADDQ $512, DI; \
	ADDQ $vstep, R10; \
	SUBQ $128, BX; \
	JG block; \
	VZEROUPPER; \
	RET
