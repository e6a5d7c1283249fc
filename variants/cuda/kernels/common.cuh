// common.cuh: what every kernel file of the cuda family shares. NVRTC
// compiles each file with this text in front of it (module.go); nothing is
// #included, so no CUDA header needs to be installed where it runs.

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef short i16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;

#define QK_K 256
#define WARP 32

// IEEE half and bfloat16 bits to float, exactly.
__device__ __forceinline__ float h2f(u16 h) {
	float f;
	asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
	return f;
}
__device__ __forceinline__ float bf2f(u16 h) { return __int_as_float(((u32)h) << 16); }

// Float to IEEE half bits, round to nearest even (ggml's FP32_TO_FP16).
__device__ __forceinline__ u16 f2h(float f) {
	u16 h;
	asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
	return h;
}

// Four u8 (a) times four i8 (b), summed into c.
__device__ __forceinline__ int dp4a_us(u32 a, int b, int c) {
	int d;
	asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
	return d;
}
// DP4A_US16(s, v, LD, p) declares s, the sum of 16 products: the unsigned
// bytes of v's four words times the signed bytes LD reads at p, p + 4,
// p + 8 and p + 12 (a macro: the callers' code as it was written out).
#define DP4A_US16(s, v, LD, p)           \
	int s = dp4a_us((v)[0], LD(p), 0);   \
	s = dp4a_us((v)[1], LD((p) + 4), s); \
	s = dp4a_us((v)[2], LD((p) + 8), s); \
	s = dp4a_us((v)[3], LD((p) + 12), s)

// Four i8 times four i8, summed into c.
__device__ __forceinline__ int dp4a_ss(int a, int b, int c) {
	int d;
	asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
	return d;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}
__device__ __forceinline__ int warp_sum_i(int v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// Read-only loads through the non-coherent (texture) path.
__device__ __forceinline__ uint4 ld16(const void* p) { return __ldg((const uint4*)p); }
__device__ __forceinline__ uint2 ld8(const void* p) { return __ldg((const uint2*)p); }
__device__ __forceinline__ u32 ld4(const void* p) { return __ldg((const u32*)p); }
__device__ __forceinline__ u16 ld2(const void* p) { return __ldg((const u16*)p); }

// Activation loads: through the non-coherent path from global memory, or
// plain loads where the activations sit in shared memory (SHARED:
// persistent.cu's steps). The same bytes either way, so the same sums.
template <bool SHARED> __device__ __forceinline__ u32 act_ld4(const u8* p) {
	if constexpr (SHARED) return *(const u32*)p;
	else return ld4(p);
}
template <bool SHARED> __device__ __forceinline__ u16 act_ld2(const u8* p) {
	if constexpr (SHARED) return *(const u16*)p;
	else return ld2(p);
}

#define NEG_INF __int_as_float(0xff800000)

// Device row layouts of the repacked weight formats (matvec.cu, repack in
// matvec.go): bytes of one row of nb blocks.
__device__ __forceinline__ int pad16(int n) { return (n + 15) & ~15; }
__device__ __forceinline__ size_t q6k_row_bytes(int nb) { return (size_t)208 * nb + pad16(2 * nb); }
__device__ __forceinline__ size_t q80_row_bytes(int nb) { return (size_t)pad16(2 * nb) + (size_t)32 * nb; }

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024);
// every thread gets it. red holds 32 doubles of shared memory.
__device__ __forceinline__ double block_sum_d(double v, double* red) {
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	v = warp_sum_d(v);
	__syncthreads(); // red may still be read from a previous call
	if (lane == 0) red[warp] = v;
	__syncthreads();
	const int nw = blockDim.x >> 5;
	v = lane < nw ? red[lane] : 0.0;
	return warp_sum_d(v);
}


// ---- Q4_K scales (matvec.cu, persistent.cu, mma.cu, engine.cu) ----------------

// Halfword i (0..5) of a Q4_K block's twelve packed scale bytes, from its
// first 16 bytes.
__device__ __forceinline__ u32 q4k_scale16(uint4 hdr, int i) {
	const u32 w = i < 2 ? hdr.y : (i < 4 ? hdr.z : hdr.w);
	return (i & 1) ? w >> 16 : w & 0xffff;
}

// The 6-bit scales and mins of sub-blocks 2p and 2p+1 (ggml's
// get_scale_min_k4 for both), without a branch: lanes of one warp hold
// different p, and the two cases diverged.
__device__ __forceinline__ void q4k_scale_min_pair(uint4 hdr, int p, int& sc0, int& sc1, int& m0, int& m1) {
	const u32 a = q4k_scale16(hdr, p), b = q4k_scale16(hdr, p + 2), c = q4k_scale16(hdr, (p + 2) & 3);
	// p < 2: sc = bytes of a & 63, m = bytes of b & 63. p ≥ 2 (c is
	// halfword p-2 then): sc = low nibbles of b | top bits of c, m = high
	// nibbles of b | top bits of a.
	const u32 lo_sc = a & 0x3f3f, lo_m = b & 0x3f3f;
	const u32 hi_sc = (b & 0x0f0f) | ((c & 0xc0c0) >> 2), hi_m = ((b >> 4) & 0x0f0f) | ((a & 0xc0c0) >> 2);
	const u32 sc = p < 2 ? lo_sc : hi_sc, m = p < 2 ? lo_m : hi_m;
	sc0 = sc & 0xff;
	sc1 = sc >> 8;
	m0 = m & 0xff;
	m1 = m >> 8;
}

// The low nibbles (sub-block 2p) and the high nibbles (2p+1) of a lane's
// 16 Q4_K quant bytes q, as dp4a words.
__device__ __forceinline__ void q4k_nibbles(uint4 q, u32 (&lo)[4], u32 (&hi)[4]) {
	lo[0] = q.x & 0x0f0f0f0f;
	lo[1] = q.y & 0x0f0f0f0f;
	lo[2] = q.z & 0x0f0f0f0f;
	lo[3] = q.w & 0x0f0f0f0f;
	hi[0] = (q.x >> 4) & 0x0f0f0f0f;
	hi[1] = (q.y >> 4) & 0x0f0f0f0f;
	hi[2] = (q.z >> 4) & 0x0f0f0f0f;
	hi[3] = (q.w >> 4) & 0x0f0f0f0f;
}

// The 6-bit scale c and min m of sub-block s of a Q4_K block's 12 scale
// bytes sc (ggml's get_scale_min_k4).
__device__ __forceinline__ void q4k_sub_scale(const u8* sc, int s, int& c, int& m) {
	if (s < 4) {
		c = sc[s] & 63;
		m = sc[s + 4] & 63;
	} else {
		c = (sc[s + 4] & 0x0f) | ((sc[s - 4] >> 6) << 4);
		m = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
	}
}

// q6k_unpack makes the 16 words of 6-bit quants (four dp4a groups of 16
// values: low nibbles of A, of B, high nibbles of A, of B, each with its two
// bits of H) that a lane's 16-byte loads A (ql low), B (ql high) and H (qh)
// of a repacked Q6_K block hold: v[c][i] is word i of group c.
__device__ __forceinline__ void q6k_unpack(uint4 A, uint4 B, uint4 H, u32 (&v)[4][4]) {
	const u32 a[4] = {A.x, A.y, A.z, A.w}, bq[4] = {B.x, B.y, B.z, B.w}, hq[4] = {H.x, H.y, H.z, H.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[0][i] = (a[i] & 0x0f0f0f0f) | ((hq[i] << 4) & 0x30303030);
		v[1][i] = (bq[i] & 0x0f0f0f0f) | ((hq[i] << 2) & 0x30303030);
		v[2][i] = ((a[i] >> 4) & 0x0f0f0f0f) | (hq[i] & 0x30303030);
		v[3][i] = ((bq[i] >> 4) & 0x0f0f0f0f) | ((hq[i] >> 2) & 0x30303030);
	}
}

// Byte `byte` of w, sign-extended.
__device__ __forceinline__ int sext8(u32 w, int byte) { return (int)(i8)((w >> (8 * byte)) & 0xff); }

// q6k_lane_scales are the int8 scales of a lane's four groups of a
// repacked Q6_K block (values 128hn + 32c + l0 …: byte 8hn + 2c + e of
// the block's 16 scale bytes S).
__device__ __forceinline__ void q6k_lane_scales(uint4 S, int hn, int e, int (&sc)[4]) {
	const u32 W0 = hn ? S.z : S.x, W1 = hn ? S.w : S.y;
	sc[0] = sext8(W0, e);
	sc[1] = sext8(W0, e + 2);
	sc[2] = sext8(W1, e);
	sc[3] = sext8(W1, e + 2);
}

// Q6K_LANE(A, B, H, S) declares a Q6_K lane's four scales sc[c] and its 64
// values v[c][·] (unsigned, stored +32), from its 16-byte slices A, B, H of
// the block's quants and S of its scales (the lane's hn and e in scope).
#define Q6K_LANE(A, B, H, S)       \
	int sc[4];                     \
	q6k_lane_scales(S, hn, e, sc); \
	u32 v[4][4];                   \
	q6k_unpack(A, B, H, v)

// Q6K_LANE_DOT(sum, LD4, LD2, xb) declares sum, Σ_c sc[c]·(v[c]·x) over the
// lane's four groups of 16 (Q6K_LANE's sc and v; hn, e and l0 in scope)
// and Q8_K activation block xb, read by LD4 and LD2. The quants are stored
// +32: each group's product less 32·Σx of its 16 (the block's sums).
#define Q6K_LANE_DOT(sum, LD4, LD2, xb)                               \
	int sum = 0;                                                      \
	_Pragma("unroll") for (int c = 0; c < 4; c++) {                   \
		const u8* xc = xb + 4 + 128 * hn + 32 * c + l0;               \
		DP4A_US16(s, v[c], LD4, xc);                                  \
		const int bs = (i16)LD2(xb + 260 + 2 * (8 * hn + 2 * c + e)); \
		sum += sc[c] * (s - 32 * bs);                                 \
	}

// The 32 quants and the scale of Q8_0 activation block xb (34 bytes, 2-byte
// aligned), read as nine aligned words from xb rounded down to 4 bytes (x
// has slack past its end).
template <bool SHARED = false> __device__ __forceinline__ float q80_act(const u8* xb, int qw[8]) {
	const u8* base = (const u8*)((size_t)xb & ~(size_t)3);
	const int sh = ((size_t)xb & 2) ? 32 : 16; // where the quants start in base's words, in bits
	u32 wd[9];
#pragma unroll
	for (int i = 0; i < 9; i++) wd[i] = act_ld4<SHARED>(base + 4 * i);
#pragma unroll
	for (int i = 0; i < 8; i++) qw[i] = (int)__funnelshift_rc(wd[i], wd[i + 1], sh);
	return h2f((u16)(__funnelshift_rc(wd[0], wd[1], sh - 16) & 0xffff));
}

// WARP_SCORE(dst, qg, ku): the decode attentions' score of one query head
// and key position tt, each lane holding D of their values (qg[i], ku[i]):
// lane 0 stores scale·q·k into dst, −inf for a position at or past L.
#define WARP_SCORE(dst, qg, ku)                                       \
	float d = 0.f;                                                    \
	_Pragma("unroll") for (int i = 0; i < D; i++) d += qg[i] * ku[i]; \
	d = warp_sum(d);                                                  \
	if (lane == 0) dst = tt < L ? d * scale : NEG_INF

// attn_scores (attention.cu, engine.cu) stores scale·(q·k) of key row kr
// for the NG query heads g0 … g0+NG−1 below G (rows of qs, hd floats each)
// at sc[g·chunk + tt]: the warp's lanes over the head dimension.
template <int NG>
__device__ __forceinline__ void attn_scores(const float* kr, const float* qs, float* sc, int g0, int G, int hd, int chunk, int tt,
                                            float scale, int lane) {
	float part[NG];
#pragma unroll
	for (int g = 0; g < NG; g++) part[g] = 0.f;
	for (int dd = lane; dd < hd; dd += 32) {
		const float kv = kr[dd];
#pragma unroll
		for (int g = 0; g < NG; g++)
			if (g0 + g < G) part[g] += qs[(g0 + g) * hd + dd] * kv;
	}
#pragma unroll
	for (int g = 0; g < NG; g++) {
		if (g0 + g < G) { // uniform across the warp
			const float s = warp_sum(part[g]);
			if (lane == 0) sc[(g0 + g) * chunk + tt] = s * scale;
		}
	}
}

// attn_softmax_pieces (attention.cu, engine.cu) turns each of G query
// heads' L scores (row g at sc + g·chunk) into exp(s − m) in place, a warp
// per head, and stores the head's max m and sum l at ml[2g], ml[2g+1].
__device__ __forceinline__ void attn_softmax_pieces(float* sc, float* ml, int G, int L, int chunk, int warp, int lane, int nw) {
	for (int g = warp; g < G; g += nw) {
		float m = NEG_INF;
		for (int tt = lane; tt < L; tt += 32) m = fmaxf(m, sc[g * chunk + tt]);
		m = warp_max(m);
		float l = 0.f;
		for (int tt = lane; tt < L; tt += 32) {
			const float p = expf(sc[g * chunk + tt] - m);
			sc[g * chunk + tt] = p;
			l += p;
		}
		l = warp_sum(l);
		if (lane == 0) {
			ml[2 * g] = m;
			ml[2 * g + 1] = l;
		}
	}
}

// ---- tensor-core tiles (mma.cu, mma_pipe.cu) --------------------------------

// A thread's four places of an m16n8 C fragment: rows g and g+8 (scales s0,
// s1), tokens 2q4 and 2q4+1 (x0, x1). mma_scale_add adds s·x·c to each, c
// the place's integer product; mma_token_add adds s·x·v, v0 and v1 the two
// tokens' terms; mma_int_add adds the integer products s·c.
__device__ __forceinline__ void mma_scale_add(float (&acc)[4], float s0, float s1, float x0, float x1, const int (&c)[4]) {
	acc[0] += s0 * x0 * (float)c[0];
	acc[1] += s0 * x1 * (float)c[1];
	acc[2] += s1 * x0 * (float)c[2];
	acc[3] += s1 * x1 * (float)c[3];
}
__device__ __forceinline__ void mma_token_add(float (&acc)[4], float s0, float s1, float x0, float x1, float v0, float v1) {
	acc[0] += s0 * x0 * v0;
	acc[1] += s0 * x1 * v1;
	acc[2] += s1 * x0 * v0;
	acc[3] += s1 * x1 * v1;
}
__device__ __forceinline__ void mma_int_add(int (&isum)[4], int s0, int s1, const int (&c)[4]) {
	isum[0] += s0 * c[0];
	isum[1] += s0 * c[1];
	isum[2] += s1 * c[2];
	isum[3] += s1 * c[3];
}

// sumsq_as_vb is the sum of squares of the dim values xs (shared memory)
// in the order a block of vb threads takes it (add_rmsnorm at blockFor(dim)
// threads: thread vt sums vt, vt+vb, … in double, then the warps'
// butterflies, then theirs), taken by this block of nt threads (nt and vb
// multiples of 32); every thread gets it. red holds 32 doubles; the caller
// synchronizes before xs is read and after the result is used if red is.
__device__ __forceinline__ double sumsq_as_vb(const float* xs, int dim, int vb, int nt, double* red) {
	const int lane = threadIdx.x & 31;
	for (int v0 = 0; v0 < vb; v0 += nt) {
		const int vt = v0 + threadIdx.x;
		double ss = 0;
		if (vt < vb) {
			for (int i = vt; i < dim; i += vb) {
				const float v = xs[i];
				ss += (double)v * v;
			}
		}
		ss = warp_sum_d(ss);
		if (lane == 0 && vt < vb) red[vt >> 5] = ss;
	}
	__syncthreads();
	double ss = lane < (vb >> 5) ? red[lane] : 0.0;
	return warp_sum_d(ss);
}

// PDL_START begins every kernel the engine launches: with programmatic
// dependent launch (the engine's decode step) a kernel may start while the
// one before it finishes, so it first waits for that grid's writes
// (griddepcontrol.wait), then lets the next kernel start early in turn.
// Launched without the attribute (the ledger's forms), both are no-ops.
// PDL_PRE and PDL_POST bracket what a kernel may do before the wait:
// reads of what no earlier kernel writes (the weights). Two ways round
// were tried on the H200 in session 9 (3B tg256, 3 rounds each) and lost,
// kept as macros to compare (DAMASCUS_CUDA_DEFINES): -DPDL_LAUNCH_FIRST
// lets dependents launch before the wait (430 against 447 tok/s), and
// -DPREFETCH has each matvec ask L2 for its row before the wait (a
// further 410; alone, in session 15: 475/517/493 against 531/529/525).
#define PDL_LAUNCH() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#ifdef PDL_LAUNCH_FIRST
#define PDL_PRE() PDL_LAUNCH()
#define PDL_POST() PDL_WAIT()
#else
#define PDL_PRE()
#define PDL_POST()    \
	do {            \
		PDL_WAIT();   \
		PDL_LAUNCH(); \
	} while (0)
#endif
#define PDL_START() \
	do {          \
		PDL_PRE();  \
		PDL_POST(); \
	} while (0)

// prefetch_l2 (-DPREFETCH) has a warp's lanes ask L2 for the 128-byte
// lines of the n bytes at p; without it, nothing.
__device__ __forceinline__ void prefetch_l2(const void* p, size_t n, int lane) {
#ifdef PREFETCH
	const size_t end = (size_t)p + n;
	for (size_t a = ((size_t)p & ~(size_t)127) + 128 * (size_t)lane; a < end; a += 32 * 128)
		asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
#endif
}
