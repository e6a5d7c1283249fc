// matvec.cu: quantized matrix-vector (decode) and matrix-matrix (prefill)
// products. One warp per weight row; NT activation rows (tokens) share each
// weight load: NT = 1 is the matvec, NT = 8 the correctness-first matmul.
// dst[j*ldd + r] = W[r]·X[j] for r < rows, j < n.
//
// Weights: Q4_K in ggml's own layout (144-byte blocks: rows are 16-byte
// aligned, so every load is 16 bytes); Q6_K and Q8_0 repacked on upload
// (repack.go) into per-row planes that make 16-byte loads possible, since
// their 210- and 34-byte blocks leave rows only 2-byte aligned.
// Activations: ggml's Q8_K (292-byte blocks, 4-byte aligned) and Q8_0
// (34-byte blocks) as the ledger contract has them; x must stay readable 4
// bytes past its end (the Q8_0 reader loads whole aligned words).

// MV_U is the steps' weight loads a single-token product (the _mv entries,
// mv_multi) issues before using any (the U of the _rows templates; the same
// blocks in the same order whatever it is, so the same bits): 1 unless a
// timing experiment defines it (DAMASCUS_CUDA_DEFINES=MV_U=3).
#ifndef MV_U
#define MV_U 1
#endif

// E, above 0, has a Q4_K or Q6_K product load its first step's weights
// into registers before griddepcontrol.wait, so that fetch overlaps the
// kernel before it in the engine's graph (cuda-early: the _e entries,
// mv_multi_e); E = 2 also issues every later step's loads before the step
// ahead of it is used (software-pipelined, one more step's weights in
// registers; cuda-early2: _e2, mv_multi_e2). The same blocks in the same
// order: the same bits.

// ROWS_START(QB) opens every <type>_rows product: warp w of the block
// takes weight row blk·warps + w (none past rows), of nb blocks of QB
// values; grid row blockIdx.y the NT tokens from tok0, ntok of them below
// n. What it may do before griddepcontrol.wait starts here (PDL_PRE); the
// caller's PDL_POST ends it.
#define ROWS_START(QB)                                            \
	PDL_PRE();                                                    \
	const int lane = threadIdx.x & 31;                            \
	const int row = blk * (blockDim.x >> 5) + (threadIdx.x >> 5); \
	const int tok0 = blockIdx.y * NT;                             \
	if (row >= rows) return;                                      \
	const int ntok = min(NT, n - tok0);                           \
	const int nb = k / QB

// ---- Q4_K × Q8_K -----------------------------------------------------------

// q4k_load loads the 16-byte header and the 16 quant bytes at qoff of the
// U blocks b0, b0+4, … below nb of Q4_K row wr.
template <int U>
__device__ __forceinline__ void q4k_load(const u8* __restrict__ wr, int b0, int nb, int qoff, uint4 (&hdrs)[U],
                                         uint4 (&qs)[U]) {
#pragma unroll
	for (int u = 0; u < U; u++) {
		const int b = b0 + 4 * u;
		if (b < nb) {
			hdrs[u] = ld16(wr + (size_t)b * 144);
			qs[u] = ld16(wr + (size_t)b * 144 + qoff);
		}
	}
}

// Eight lanes per block: lane t holds 16 bytes of quants, pair p = t/2
// (sub-blocks 2p in the low nibbles, 2p+1 in the high), half h = t%2
// (values 16h … 16h+15 of each); a warp takes four blocks per step.
template <int NT, int U, int E = 0>
__device__ __forceinline__ void q4k_rows(float* __restrict__ dst, int ldd, const u8* __restrict__ w, int rows,
                                         const u8* __restrict__ x, int n, int k, int blk) {
	ROWS_START(QK_K);
	const u8* wr = w + (size_t)row * nb * 144;
	prefetch_l2(wr, (size_t)nb * 144, lane); // with -DPREFETCH: the row, before the wait
	if constexpr (E == 0) PDL_POST();
	const u8* xr = x + (size_t)tok0 * nb * 292;
	const int t = lane & 7, p = t >> 1, h = t & 1;
	const int qoff = 16 + 32 * p + 16 * h; // this lane's 16 quant bytes in a block
	// U steps' weight loads issued before any is used: the row's HBM
	// latency is paid once per U steps, not once per step.
	uint4 hdrs[U], qs[U];
	if constexpr (E > 0) {
		q4k_load<U>(wr, lane >> 3, nb, qoff, hdrs, qs);
		PDL_POST();
	}
	// The scale and min terms summed apart, as ggml's CPU kernels do: their
	// difference cancels, so it is taken once, at the end.
	float acc[NT], accm[NT];
#pragma unroll
	for (int j = 0; j < NT; j++) acc[j] = accm[j] = 0.f;
	for (int b0 = lane >> 3; b0 < nb; b0 += 4 * U) {
		uint4 nhdrs[U], nqs[U]; // E = 2: the next step's, in flight during this one
		if constexpr (E == 2) {
			q4k_load<U>(wr, b0 + 4 * U, nb, qoff, nhdrs, nqs);
		} else if (E == 0 || b0 != (lane >> 3)) {
			q4k_load<U>(wr, b0, nb, qoff, hdrs, qs);
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 4 * u;
			if (b >= nb) break;
			const uint4 hdr = hdrs[u], q = qs[u];
			const float d = h2f(hdr.x & 0xffff), dmin = h2f(hdr.x >> 16);
			int sc0, m0, sc1, m1;
			q4k_scale_min_pair(hdr, p, sc0, sc1, m0, m1);
			u32 lo[4], hi[4];
			q4k_nibbles(q, lo, hi);
#pragma unroll
			for (int j = 0; j < NT; j++) {
				if (j < ntok) {
					const u8* xb = xr + ((size_t)j * nb + b) * 292;
					const u8* x0 = xb + 4 + 64 * p + 16 * h; // sub-block 2p, values 16h…
					const u8* x1 = x0 + 32;                  // sub-block 2p+1
					DP4A_US16(s0, lo, ld4, x0);
					DP4A_US16(s1, hi, ld4, x1);
					const float xd = __int_as_float(ld4(xb));
					const int bs0 = (i16)ld2(xb + 260 + 2 * (4 * p + h));     // Σ of the 16 activations of s0
					const int bs1 = (i16)ld2(xb + 260 + 2 * (4 * p + 2 + h)); // … of s1
					acc[j] += xd * d * (float)(sc0 * s0 + sc1 * s1);
					accm[j] += xd * dmin * (float)(m0 * bs0 + m1 * bs1);
				}
			}
		}
		if constexpr (E == 2) {
#pragma unroll
			for (int u = 0; u < U; u++) hdrs[u] = nhdrs[u], qs[u] = nqs[u];
		}
	}
#pragma unroll
	for (int j = 0; j < NT; j++) {
		const float v = warp_sum(acc[j]) - warp_sum(accm[j]);
		if (lane == 0 && j < ntok) dst[(size_t)(tok0 + j) * ldd + row] = v;
	}
}

// Entry points: <type>_mv (one step at a time), <type>_mv_u2 and _u4 (two
// or four steps' loads in flight), <type>_mm8 (8 tokens a block).
#define MATVEC_ENTRIES(T)                                                                                           \
	extern "C" __global__ void __launch_bounds__(128) T##_mv(float* dst, const u8* w, int rows, const u8* x, int k) {    \
		T##_rows<1, MV_U>(dst, 0, w, rows, x, 1, k, blockIdx.x);                                                                      \
	}                                                                                                                   \
	extern "C" __global__ void __launch_bounds__(128) T##_mv_u2(float* dst, const u8* w, int rows, const u8* x, int k) { \
		T##_rows<1, 2>(dst, 0, w, rows, x, 1, k, blockIdx.x);                                                                         \
	}                                                                                                                   \
	extern "C" __global__ void __launch_bounds__(128) T##_mv_u4(float* dst, const u8* w, int rows, const u8* x, int k) { \
		T##_rows<1, 4>(dst, 0, w, rows, x, 1, k, blockIdx.x);                                                                         \
	}                                                                                                                   \
	extern "C" __global__ void __launch_bounds__(128)                                                                   \
	    T##_mm8(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {                                \
		T##_rows<8, 1>(dst, ldd, w, rows, x, n, k, blockIdx.x);                                                                       \
	}

MATVEC_ENTRIES(q4k)

// <type>_mv_e and _e2: cuda-early and cuda-early2 (E above). _e held to
// 12 blocks an SM (40 registers: without the bound the first step's special
// case takes 40 and 48, where q4k_mv takes 31 and q6k_mv 40; NVRTC 11.8).
#define EARLY_ENTRY(T)                                                                                               \
	extern "C" __global__ void __launch_bounds__(128, 12) T##_mv_e(float* dst, const u8* w, int rows, const u8* x, int k) {  \
		T##_rows<1, 1, 1>(dst, 0, w, rows, x, 1, k, blockIdx.x);                                                    \
	}                                                                                                                \
	extern "C" __global__ void __launch_bounds__(128) T##_mv_e2(float* dst, const u8* w, int rows, const u8* x, int k) { \
		T##_rows<1, 1, 2>(dst, 0, w, rows, x, 1, k, blockIdx.x);                                                    \
	}

EARLY_ENTRY(q4k)

// ---- Q6_K (repacked) × Q8_K -------------------------------------------------
//
// A row of nb blocks is three planes: nb×192 bytes of quants (each block's
// ql[128] then qh[64]), nb×16 bytes of int8 scales, nb halves d padded to 16
// bytes: q6k_row_bytes(nb) = 208·nb + pad16(2·nb).


// q6kSteps holds one lane's loads of U steps of a repacked Q6_K row: the
// blocks b0, b0+8, … below nb, 16 bytes each of ql low, ql high and qh,
// the block's 16 scales, its d.
template <int U>
struct q6kSteps {
	uint4 A[U], B[U], H[U], S[U];
	u16 d[U];
	__device__ __forceinline__ void load(const u8* __restrict__ qplane, int b0, int nb, int hn, int l0) {
		const u8* splane = qplane + (size_t)192 * nb;
		const u8* dplane = splane + (size_t)16 * nb;
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 8 * u;
			if (b < nb) {
				const u8* qb = qplane + (size_t)b * 192;
				A[u] = ld16(qb + 64 * hn + l0);
				B[u] = ld16(qb + 64 * hn + 32 + l0);
				H[u] = ld16(qb + 128 + 32 * hn + l0);
				S[u] = ld16(splane + 16 * b);
				d[u] = ld2(dplane + 2 * b);
			}
		}
	}
};

// Four lanes per block: lane t takes half n = t/2 of the block (values
// 128n …) and l0 = 16·(t%2): 16 bytes of ql low, ql high and qh each, so
// the 64 values 128n + 32c + l0 + i (c < 4, i < 16); a warp takes eight
// blocks per step.
template <int NT, int U, int E = 0>
__device__ __forceinline__ void q6k_rows(float* __restrict__ dst, int ldd, const u8* __restrict__ w, int rows,
                                         const u8* __restrict__ x, int n, int k, int blk) {
	ROWS_START(QK_K);
	const u8* qplane = w + (size_t)row * q6k_row_bytes(nb);
	prefetch_l2(qplane, q6k_row_bytes(nb), lane);
	if constexpr (E == 0) PDL_POST();
	const u8* xr = x + (size_t)tok0 * nb * 292;
	const int t = lane & 3, hn = t >> 1, e = t & 1, l0 = 16 * e;
	q6kSteps<U> cur; // E > 0: the first step's loads before the wait
	if constexpr (E > 0) {
		cur.load(qplane, lane >> 2, nb, hn, l0);
		PDL_POST();
	}
	float acc[NT];
#pragma unroll
	for (int j = 0; j < NT; j++) acc[j] = 0.f;
	for (int b0 = lane >> 2; b0 < nb; b0 += 8 * U) {
		q6kSteps<U> next; // E = 2: the next step's, in flight during this one
		if constexpr (E == 2) {
			next.load(qplane, b0 + 8 * U, nb, hn, l0);
		} else if (E == 0 || b0 != (lane >> 2)) {
			cur.load(qplane, b0, nb, hn, l0);
		}
		const uint4(&As)[U] = cur.A, (&Bs)[U] = cur.B, (&Hs)[U] = cur.H, (&Ss)[U] = cur.S;
		const u16(&ds)[U] = cur.d;
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 8 * u;
			if (b >= nb) break;
			const uint4 A = As[u], B = Bs[u], H = Hs[u], S = Ss[u];
			const float d = h2f(ds[u]);
			Q6K_LANE(A, B, H, S);
#pragma unroll
			for (int j = 0; j < NT; j++) {
				if (j < ntok) {
					const u8* xb = xr + ((size_t)j * nb + b) * 292;
					Q6K_LANE_DOT(sum, ld4, ld2, xb);
					acc[j] += __int_as_float(ld4(xb)) * d * (float)sum;
				}
			}
		}
		if constexpr (E == 2) cur = next;
	}
#pragma unroll
	for (int j = 0; j < NT; j++) {
		const float r = warp_sum(acc[j]);
		if (lane == 0 && j < ntok) dst[(size_t)(tok0 + j) * ldd + row] = r;
	}
}

MATVEC_ENTRIES(q6k)
EARLY_ENTRY(q6k)

// ---- Q8_0 (repacked) × Q8_0 -------------------------------------------------
//
// A row of nb blocks is nb halves d padded to 16 bytes, then nb×32 quants:
// q80_row_bytes(nb) = pad16(2·nb) + 32·nb. One lane per block, a warp takes
// 32 blocks (1 KiB of quants) per step.


template <int NT, int U>
__device__ __forceinline__ void q80_rows(float* __restrict__ dst, int ldd, const u8* __restrict__ w, int rows,
                                         const u8* __restrict__ x, int n, int k, int blk) {
	ROWS_START(32);
	const u8* dplane = w + (size_t)row * q80_row_bytes(nb);
	prefetch_l2(dplane, q80_row_bytes(nb), lane);
	PDL_POST();
	const u8* qplane = dplane + pad16(2 * nb);
	const u8* xr = x + (size_t)tok0 * nb * 34;
	float acc[NT];
#pragma unroll
	for (int j = 0; j < NT; j++) acc[j] = 0.f;
	for (int b0 = lane; b0 < nb; b0 += 32 * U) {
		uint4 qa[U], qb[U];
		u16 ds[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 32 * u;
			if (b < nb) {
				qa[u] = ld16(qplane + 32 * b);
				qb[u] = ld16(qplane + 32 * b + 16);
				ds[u] = ld2(dplane + 2 * b);
			}
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 32 * u;
			if (b >= nb) break;
			const float d = h2f(ds[u]);
			const int wq[8] = {(int)qa[u].x, (int)qa[u].y, (int)qa[u].z, (int)qa[u].w,
			                   (int)qb[u].x, (int)qb[u].y, (int)qb[u].z, (int)qb[u].w};
#pragma unroll
			for (int j = 0; j < NT; j++) {
				if (j < ntok) {
					int xq[8];
					const float xd = q80_act(xr + ((size_t)j * nb + b) * 34, xq);
					int s = 0;
#pragma unroll
					for (int i = 0; i < 8; i++) s = dp4a_ss(wq[i], xq[i], s);
					acc[j] += d * xd * (float)s;
				}
			}
		}
	}
#pragma unroll
	for (int j = 0; j < NT; j++) {
		const float r = warp_sum(acc[j]);
		if (lane == 0 && j < ntok) dst[(size_t)(tok0 + j) * ldd + row] = r;
	}
}

MATVEC_ENTRIES(q80)

// ---- several matrices over one input, in one launch ------------------------

// Up to three matvecs sharing the activation row x (Q, K and V; gate and
// up): segment i is rows_i rows of format f_i (0 Q4_K, 1 Q6_K, 2 Q8_0) into
// d_i, taking (rows_i+3)/4 consecutive blocks of the grid. The formats'
// activation types must agree (the caller's check).
template <int E>
__device__ __forceinline__ void mv_seg(int f, float* d, const u8* w, int rows, const u8* x, int k, int blk) {
	switch (f) {
	case 0: q4k_rows<1, MV_U, E>(d, 0, w, rows, x, 1, k, blk); break;
	case 1: q6k_rows<1, MV_U, E>(d, 0, w, rows, x, 1, k, blk); break;
	default: q80_rows<1, MV_U>(d, 0, w, rows, x, 1, k, blk); break;
	}
}

template <int E>
__device__ __forceinline__ void mv_multi_body(const u8* x, int k, float* d0, const u8* w0, int r0, int f0, float* d1,
                                              const u8* w1, int r1, int f1, float* d2, const u8* w2, int r2, int f2) {
	int blk = blockIdx.x;
	const int b0 = (r0 + 3) / 4, b1 = (r1 + 3) / 4;
	if (blk < b0) {
		mv_seg<E>(f0, d0, w0, r0, x, k, blk);
	} else if ((blk -= b0) < b1) {
		mv_seg<E>(f1, d1, w1, r1, x, k, blk);
	} else {
		mv_seg<E>(f2, d2, w2, r2, x, k, blk - b1);
	}
}

extern "C" __global__ void __launch_bounds__(128) mv_multi(const u8* x, int k, float* d0, const u8* w0, int r0, int f0,
                                                           float* d1, const u8* w1, int r1, int f1, float* d2,
                                                           const u8* w2, int r2, int f2) {
	mv_multi_body<0>(x, k, d0, w0, r0, f0, d1, w1, r1, f1, d2, w2, r2, f2);
}

// mv_multi_e and _e2: mv_multi with cuda-early's and cuda-early2's Q4_K
// and Q6_K segments.
extern "C" __global__ void __launch_bounds__(128) mv_multi_e(const u8* x, int k, float* d0, const u8* w0, int r0,
                                                             int f0, float* d1, const u8* w1, int r1, int f1,
                                                             float* d2, const u8* w2, int r2, int f2) {
	mv_multi_body<1>(x, k, d0, w0, r0, f0, d1, w1, r1, f1, d2, w2, r2, f2);
}
extern "C" __global__ void __launch_bounds__(128) mv_multi_e2(const u8* x, int k, float* d0, const u8* w0, int r0,
                                                              int f0, float* d1, const u8* w1, int r1, int f1,
                                                              float* d2, const u8* w2, int r2, int f2) {
	mv_multi_body<2>(x, k, d0, w0, r0, f0, d1, w1, r1, f1, d2, w2, r2, f2);
}

// ---- cuda-xs: the activation row staged in shared memory ------------------
//
// The single-token products above read every activation value from global
// memory (L1) in each warp: 13 loads a lane a step for 16 bytes of weights,
// and the activation loads' latency sits in every step's chain. Here the
// block first copies the Q8_K row into shared memory, split into planes
// (k quants, 16-byte aligned; nb scales; 16·nb block sums), so a step's
// activations are two (Q4_K) or four (Q6_K) 16-byte shared loads, and each
// warp takes R rows at once, their weight loads all issued before any is
// used. A block is XS_WARPS warps. The lanes, blocks and sums are
// q4k_rows<1,1>'s and q6k_rows<1,1>'s, in the same order: the same bits.

#define XS_WARPS 8

// xs_shared is the shared memory a block needs for a row of k values.
__host__ __device__ __forceinline__ int xs_shared(int k) { return k + 36 * (k / QK_K); }

// stage_q8k copies the nb Q8_K blocks at x (292 bytes each: d, 256 quants,
// 16 sums) into sm as the planes above, a 4-byte word a thread at a time.
__device__ __forceinline__ void stage_q8k(u8* sm, const u8* __restrict__ x, int nb) {
	u32* sq = (u32*)sm;
	u32* sd = (u32*)(sm + QK_K * nb);
	u32* sb = (u32*)(sm + (QK_K + 4) * nb);
	for (int i = threadIdx.x; i < 73 * nb; i += blockDim.x) {
		const int b = i / 73, o = i - 73 * b;
		const u32 v = ld4(x + 4 * (size_t)i);
		if (o == 0) {
			sd[b] = v;
		} else if (o <= 64) {
			sq[64 * b + o - 1] = v;
		} else {
			sb[8 * b + o - 65] = v;
		}
	}
}

// XS_START(ROW_BYTES) opens q4k_xs and q6k_xs: warp w of the block takes
// the R rows from row0 = (blk·XS_WARPS + w)·R (none past rows), each of nb
// blocks, ROW_BYTES bytes (unparenthesized: the products' int and size_t
// steps as written out before); wr[r] is row0 + r's (the last row again
// past rows). sq, sd and sb are stage_q8k's planes of the activation row
// in shared memory sm: its quants, block scales and 16-value sums.
#define XS_START(ROW_BYTES)                                                                                \
	const int lane = threadIdx.x & 31;                                                                     \
	const int row0 = (blk * XS_WARPS + (threadIdx.x >> 5)) * R;                                            \
	if (row0 >= rows) return;                                                                              \
	const int nb = k / QK_K;                                                                               \
	const u8* wr[R];                                                                                       \
	_Pragma("unroll") for (int r = 0; r < R; r++) wr[r] = w + (size_t)min(row0 + r, rows - 1) * ROW_BYTES; \
	const u8* sq = sm;                                                                                     \
	const float* sd = (const float*)(sm + QK_K * nb);                                                      \
	const i16* sb = (const i16*)(sm + (QK_K + 4) * nb)

template <int R>
__device__ __forceinline__ void q4k_xs(float* __restrict__ dst, const u8* __restrict__ w, int rows, int k, int blk,
                                       const u8* sm) {
	XS_START(nb * 144);
	const int t = lane & 7, p = t >> 1, h = t & 1;
	float acc[R], accm[R];
#pragma unroll
	for (int r = 0; r < R; r++) acc[r] = accm[r] = 0.f;
	for (int b = lane >> 3; b < nb; b += 4) {
		uint4 hdrs[R], qs[R];
#pragma unroll
		for (int r = 0; r < R; r++) {
			hdrs[r] = ld16(wr[r] + (size_t)b * 144);
			qs[r] = ld16(wr[r] + (size_t)b * 144 + 16 + 32 * p + 16 * h);
		}
		const uint4 xa = *(const uint4*)(sq + QK_K * b + 64 * p + 16 * h); // sub-block 2p, values 16h…
		const uint4 xc = *(const uint4*)(sq + QK_K * b + 64 * p + 32 + 16 * h);
		const float xd = sd[b];
		const int bs0 = sb[16 * b + 4 * p + h], bs1 = sb[16 * b + 4 * p + 2 + h];
#pragma unroll
		for (int r = 0; r < R; r++) {
			const uint4 hdr = hdrs[r], q = qs[r];
			const float d = h2f(hdr.x & 0xffff), dmin = h2f(hdr.x >> 16);
			int sc0, m0, sc1, m1;
			q4k_scale_min_pair(hdr, p, sc0, sc1, m0, m1);
			int s0 = dp4a_us(q.x & 0x0f0f0f0f, (int)xa.x, 0);
			s0 = dp4a_us(q.y & 0x0f0f0f0f, (int)xa.y, s0);
			s0 = dp4a_us(q.z & 0x0f0f0f0f, (int)xa.z, s0);
			s0 = dp4a_us(q.w & 0x0f0f0f0f, (int)xa.w, s0);
			int s1 = dp4a_us((q.x >> 4) & 0x0f0f0f0f, (int)xc.x, 0);
			s1 = dp4a_us((q.y >> 4) & 0x0f0f0f0f, (int)xc.y, s1);
			s1 = dp4a_us((q.z >> 4) & 0x0f0f0f0f, (int)xc.z, s1);
			s1 = dp4a_us((q.w >> 4) & 0x0f0f0f0f, (int)xc.w, s1);
			acc[r] += xd * d * (float)(sc0 * s0 + sc1 * s1);
			accm[r] += xd * dmin * (float)(m0 * bs0 + m1 * bs1);
		}
	}
#pragma unroll
	for (int r = 0; r < R; r++) {
		const float v = warp_sum(acc[r]) - warp_sum(accm[r]);
		if (lane == 0 && row0 + r < rows) dst[row0 + r] = v;
	}
}

template <int R>
__device__ __forceinline__ void q6k_xs(float* __restrict__ dst, const u8* __restrict__ w, int rows, int k, int blk,
                                       const u8* sm) {
	XS_START(q6k_row_bytes(nb));
	const int t = lane & 3, hn = t >> 1, e = t & 1, l0 = 16 * e;
	float acc[R];
#pragma unroll
	for (int r = 0; r < R; r++) acc[r] = 0.f;
	for (int b = lane >> 2; b < nb; b += 8) {
		uint4 As[R], Bs[R], Hs[R], Ss[R];
		u16 ds[R];
#pragma unroll
		for (int r = 0; r < R; r++) {
			const u8* qb = wr[r] + (size_t)b * 192;
			As[r] = ld16(qb + 64 * hn + l0);
			Bs[r] = ld16(qb + 64 * hn + 32 + l0);
			Hs[r] = ld16(qb + 128 + 32 * hn + l0);
			Ss[r] = ld16(wr[r] + (size_t)192 * nb + 16 * b);
			ds[r] = ld2(wr[r] + (size_t)208 * nb + 2 * b);
		}
		uint4 xq[4];
		int bs[4];
#pragma unroll
		for (int c = 0; c < 4; c++) {
			xq[c] = *(const uint4*)(sq + QK_K * b + 128 * hn + 32 * c + l0);
			bs[c] = sb[16 * b + 8 * hn + 2 * c + e];
		}
		const float xd = sd[b];
#pragma unroll
		for (int r = 0; r < R; r++) {
			const uint4 A = As[r], B = Bs[r], H = Hs[r], S = Ss[r];
			const float d = h2f(ds[r]);
			Q6K_LANE(A, B, H, S);
			int sum = 0;
#pragma unroll
			for (int c = 0; c < 4; c++) {
				int s = dp4a_us(v[c][0], (int)xq[c].x, 0);
				s = dp4a_us(v[c][1], (int)xq[c].y, s);
				s = dp4a_us(v[c][2], (int)xq[c].z, s);
				s = dp4a_us(v[c][3], (int)xq[c].w, s);
				sum += sc[c] * (s - 32 * bs[c]);
			}
			acc[r] += xd * d * (float)sum;
		}
	}
#pragma unroll
	for (int r = 0; r < R; r++) {
		const float v = warp_sum(acc[r]);
		if (lane == 0 && row0 + r < rows) dst[row0 + r] = v;
	}
}

// xs_seg is segment f (0 Q4_K, 1 Q6_K) of a cuda-xs launch.
template <int R>
__device__ __forceinline__ void xs_seg(int f, float* d, const u8* w, int rows, int k, int blk, const u8* sm) {
	if (f == 0) {
		q4k_xs<R>(d, w, rows, k, blk, sm);
	} else {
		q6k_xs<R>(d, w, rows, k, blk, sm);
	}
}

// mv_xs<R> is one to three Q8_K-activation products over the row x (Q, K
// and V; gate and up; or one matrix with r1 = r2 = 0), XS_WARPS·R rows a
// block, xs_shared(k) bytes of dynamic shared memory.
template <int R>
__device__ __forceinline__ void mv_xs(const u8* x, int k, float* d0, const u8* w0, int r0, int f0, float* d1,
                                      const u8* w1, int r1, int f1, float* d2, const u8* w2, int r2, int f2) {
	extern __shared__ __align__(16) u8 xs_sm[];
	PDL_START();
	stage_q8k(xs_sm, x, k / QK_K);
	__syncthreads();
	const int per = XS_WARPS * R;
	int blk = blockIdx.x;
	const int b0 = (r0 + per - 1) / per, b1 = (r1 + per - 1) / per;
	if (blk < b0) {
		xs_seg<R>(f0, d0, w0, r0, k, blk, xs_sm);
	} else if ((blk -= b0) < b1) {
		xs_seg<R>(f1, d1, w1, r1, k, blk, xs_sm);
	} else {
		xs_seg<R>(f2, d2, w2, r2, k, blk - b1, xs_sm);
	}
}

// Entry points: mv_xs1, mv_xs2, mv_xs4 (rows a warp).
#define XS_ENTRY(R)                                                                                               \
	extern "C" __global__ void __launch_bounds__(32 * XS_WARPS) mv_xs##R(                                         \
	    const u8* x, int k, float* d0, const u8* w0, int r0, int f0, float* d1, const u8* w1, int r1, int f1,    \
	    float* d2, const u8* w2, int r2, int f2) {                                                               \
		mv_xs<R>(x, k, d0, w0, r0, f0, d1, w1, r1, f1, d2, w2, r2, f2);                                          \
	}
XS_ENTRY(1)
XS_ENTRY(2)
XS_ENTRY(4)
