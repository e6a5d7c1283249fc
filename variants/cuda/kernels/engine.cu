// engine.cu: the kernels only the GPU engine (model/llama's cuda backend)
// uses, beside the ledger's: they work on n rows of a batch at once, and
// read the batch's first position from device memory (*posp), so that a
// decode step recorded once as a CUDA graph replays at every position.

// quantize_row has the block's warps quantize row r (dim values at xo) into
// its place in xq: qt 1 Q8_K (292-byte blocks of 256), 2 Q8_0 (34 of 32).
__device__ __forceinline__ void quantize_row(u8* xq, const float* xo, int r, int dim, int qt) {
	const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	if (qt == 1) {
		const int nb = dim / QK_K;
		for (int b = warp; b < nb; b += nw) warp_q8_k(xq + ((size_t)r * nb + b) * 292, xo + (size_t)b * QK_K);
	} else if (qt == 2) {
		const int nb = dim / 32;
		for (int b = warp; b < nb; b += nw) warp_q8_0(xq + ((size_t)r * nb + b) * 34, xo + (size_t)b * 32);
	}
}

// silu(g)·u into g over n rows of f values, each quantization block of a
// row (qt as quantize_row) then quantized into xq by one warp: block
// (x, row) has four warps, each lane rewriting the values it quantizes.
extern "C" __global__ void __launch_bounds__(128) silu_mul_q(float* g, const float* u, int f, u8* xq, int qt) {
	PDL_START();
	const int j = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int bs = qt == 1 ? QK_K : 32, nb = f / bs, b = blockIdx.x * 4 + warp;
	if (b >= nb) return;
	float* gr = g + (size_t)j * f + (size_t)b * bs;
	const float* ur = u + (size_t)j * f + (size_t)b * bs;
	const int per = bs / 32; // values a lane: 8 consecutive (Q8_K) or 1 (Q8_0), as the quantizers read them
	for (int i = 0; i < per; i++) {
		const int at = per * lane + i;
		const float v = gr[at];
		gr[at] = v / (1.0f + expf(-v)) * ur[at];
	}
	if (qt == 1) {
		warp_q8_k(xq + ((size_t)j * nb + b) * 292, gr);
	} else {
		warp_q8_0(xq + ((size_t)j * nb + b) * 34, gr);
	}
}

// ---- embedding: token rows of the embedding matrix as float32 -------------

// Row tok[j] of a Q4_K matrix (ggml's layout) into x[j*k …]: one thread per
// value, the reference dequantizer's roundings ((d·sc)·q − dmin·m, no fused
// multiply-add).
extern "C" __global__ void embed_q4k(float* x, const u8* w, const int* tok, int k) {
	PDL_START();
	const int j = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= k) return;
	const int nb = k / QK_K, b = i / QK_K, v = i % QK_K;
	const u8* blk = w + ((size_t)tok[j] * nb + b) * 144;
	const float d = h2f(*(const u16*)blk), dmin = h2f(*(const u16*)(blk + 2));
	const u8* sc = blk + 4;
	const int is = v / 32; // sub-block: 64-value group v/64, low nibbles first
	int s, m;
	q4k_sub_scale(sc, is, s, m);
	const int g = v / 64, l = v % 32, hi = (v / 32) & 1;
	const u8 q = blk[16 + 32 * g + l];
	const int qv = hi ? q >> 4 : q & 0x0f;
	x[(size_t)j * k + i] = __fsub_rn(__fmul_rn(__fmul_rn(d, (float)s), (float)qv), __fmul_rn(dmin, (float)m));
}

// Row tok[j] of a Q6_K matrix in the device layout (matvec.cu: quants,
// scales and d planes per row).
extern "C" __global__ void embed_q6k(float* x, const u8* w, const int* tok, int k) {
	PDL_START();
	const int j = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= k) return;
	const int nb = k / QK_K, b = i / QK_K, v = i % QK_K;
	const u8* qplane = w + (size_t)tok[j] * q6k_row_bytes(nb);
	const u8* qb = qplane + (size_t)192 * b; // ql[128], qh[64]
	const i8* sc = (const i8*)(qplane + (size_t)192 * nb + 16 * b);
	const float d = h2f(*(const u16*)(qplane + (size_t)208 * nb + 2 * b));
	const int n = v / 128, r = v % 128, c = r / 32, l = r % 32; // value 128n + 32c + l
	const u8* ql = qb + 64 * n;
	const u8* qh = qb + 128 + 32 * n;
	const u8 lo = (c & 1) ? ql[l + 32] : ql[l];
	const int q = (int)(((c < 2) ? (lo & 0x0f) : (lo >> 4)) | (((qh[l] >> (2 * c)) & 3) << 4)) - 32;
	const int is = 8 * n + l / 16 + 2 * c;
	x[(size_t)j * k + i] = __fmul_rn(__fmul_rn(d, (float)sc[is]), (float)q);
}

// Row tok[j] of a Q8_0 matrix in the device layout (d plane, then quants).
extern "C" __global__ void embed_q80(float* x, const u8* w, const int* tok, int k) {
	PDL_START();
	const int j = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= k) return;
	const int nb = k / 32;
	const u8* row = w + (size_t)tok[j] * q80_row_bytes(nb);
	const float d = h2f(*(const u16*)(row + 2 * (i / 32)));
	const i8 q = (i8)row[pad16(2 * nb) + i];
	x[(size_t)j * k + i] = __fmul_rn((float)q, d);
}

// ---- residual add and rmsnorm, one block per row ---------------------------

// x[j] += add[j] (when add is set); then, for rows j ≥ from when w is set,
// xn[j] = x[j] / sqrt(mean(x[j]²)+eps) · w (the sum of squares in double, as
// ops.cu's rmsnorm_f32), and each normalized row quantized for the next
// product (qt 1: Q8_K, 2: Q8_0, 0: not) into xq, rows from `from` on, row
// after row. The row stays in shared memory (dim floats, dynamic).
extern "C" __global__ void __launch_bounds__(1024)
add_rmsnorm(float* x, const float* add, float* xn, const float* w, int dim, float eps, int from, u8* xq, int qt) {
	PDL_START();
	extern __shared__ float xs[];
	__shared__ double red[32];
	const int j = blockIdx.x;
	float* xr = x + (size_t)j * dim;
	double ss = 0;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float v = xr[i];
		if (add) {
			v = __fadd_rn(v, add[(size_t)j * dim + i]);
			xr[i] = v;
		}
		xs[i] = v;
		ss += (double)v * v;
	}
	if (!w || j < from) return;
	ss = block_sum_d(ss, red);
	const float scale = 1.0f / sqrtf((float)(ss / dim) + eps);
	float* xo = xn + (size_t)j * dim;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		const float v = __fmul_rn(__fmul_rn(xs[i], scale), w[i]);
		xs[i] = v;
		xo[i] = v;
	}
	__syncthreads(); // the row is in xs: each warp quantizes blocks of it
	quantize_row(xq, xs, j - from, dim, qt);
}

// ---- rope, then the keys and values into the cache -------------------------

// Token j of the batch is at position *posp + j. Block (j, head): heads
// below nHeads are query heads, rotated in place; the nKV after them are
// key heads, rotated and stored with their values at the token's position
// of the cache (laid out [KV head][position][headDim]). cosT and sinT hold
// every position's angles (hd/2 a position), made on the host by the CPU
// engine's own function, so both rotate by the same float32 values.
extern "C" __global__ void rope_store(float* q, const float* k, const float* v, float* kc, float* vc, const int* posp,
                                      int nHeads, int nKV, int hd, int nctx, const float* cosT, const float* sinT,
                                      int neox) {
	PDL_START();
	const int j = blockIdx.x, h = blockIdx.y, half = hd / 2;
	const int pos = *posp + j;
	const bool isQ = h < nHeads;
	const float* src = isQ ? q + ((size_t)j * nHeads + h) * hd : k + ((size_t)j * nKV + (h - nHeads)) * hd;
	float* dst = isQ ? q + ((size_t)j * nHeads + h) * hd : kc + ((size_t)(h - nHeads) * nctx + pos) * hd;
	for (int i = threadIdx.x; i < half; i += blockDim.x) {
		const float c = cosT[(size_t)pos * half + i], s = sinT[(size_t)pos * half + i];
		const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
		const float x0 = src[a], x1 = src[b];
		dst[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
		dst[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
	}
	if (!isQ) {
		const float* vr = v + ((size_t)j * nKV + (h - nHeads)) * hd;
		float* vd = vc + ((size_t)(h - nHeads) * nctx + pos) * hd;
		for (int i = threadIdx.x; i < hd; i += blockDim.x) vd[i] = vr[i];
	}
}

// ---- causal attention of a batch over the cache, split over the context ----

#define EATT_THREADS 128
#define EATT_MAXG 8 // query heads per KV head this kernel takes

// Block (chunk c, KV head g, token j): token j (position *posp + j) attends
// to positions [c·chunk, min((c+1)·chunk, pos+1)) with the G query heads of
// g; it writes per head the partial max m, partial sum l and unnormalized
// output o (relative to m). A chunk past the token's position writes m =
// −inf, l = 0, o = 0. Partials are indexed ((j·nChunks + c)·nHeads + head).
extern "C" __global__ void __launch_bounds__(EATT_THREADS)
eattn_split(float* po, float* pml, const float* q, const float* kc, const float* vc, const int* posp, int nHeads,
            int nKV, int hd, int nctx, float scale, int chunk, int nChunks) {
	PDL_START();
	extern __shared__ float sh[];
	const int G = nHeads / nKV, kvh = blockIdx.y, c = blockIdx.x, j = blockIdx.z;
	const int ctx = *posp + j + 1, t0 = c * chunk, L = min(chunk, ctx - t0);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = EATT_THREADS / 32;
	const size_t pbase = ((size_t)j * nChunks + c) * nHeads + (size_t)kvh * G;
	if (L <= 0) {
		for (int i = tid; i < G * hd; i += EATT_THREADS) po[pbase * hd + i] = 0.f;
		for (int g = tid; g < G; g += EATT_THREADS) {
			pml[(pbase + g) * 2] = NEG_INF;
			pml[(pbase + g) * 2 + 1] = 0.f;
		}
		return;
	}
	float* qs = sh;
	float* sc = qs + G * hd;
	const float* qj = q + ((size_t)j * nHeads + (size_t)kvh * G) * hd;
	for (int i = tid; i < G * hd; i += EATT_THREADS) qs[i] = qj[i];
	__syncthreads();
	const float* kh = kc + (size_t)kvh * nctx * hd;
	const float* vh = vc + (size_t)kvh * nctx * hd;
	// Scores: a warp per position, lanes over the head dimension.
	for (int tt = warp; tt < L; tt += nw) {
		const float* kr = kh + (size_t)(t0 + tt) * hd;
		attn_scores<EATT_MAXG>(kr, qs, sc, 0, G, hd, chunk, tt, scale, lane);
	}
	__syncthreads();
	// Softmax pieces: a warp per query head.
	__shared__ float ml[2 * EATT_MAXG];
	attn_softmax_pieces(sc, ml, G, L, chunk, warp, lane, nw);
	__syncthreads();
	// Weighted values: a thread per output dimension, rows read coalesced.
	for (int dd = tid; dd < hd; dd += EATT_THREADS) {
		float o[EATT_MAXG];
#pragma unroll
		for (int g = 0; g < EATT_MAXG; g++) o[g] = 0.f;
		for (int tt = 0; tt < L; tt++) {
			const float vv = vh[(size_t)(t0 + tt) * hd + dd];
#pragma unroll
			for (int g = 0; g < EATT_MAXG; g++)
				if (g < G) o[g] += sc[g * chunk + tt] * vv;
		}
#pragma unroll
		for (int g = 0; g < EATT_MAXG; g++)
			if (g < G) po[(pbase + g) * hd + dd] = o[g];
	}
	for (int g = tid; g < G; g += EATT_THREADS) {
		pml[(pbase + g) * 2] = ml[2 * g];
		pml[(pbase + g) * 2 + 1] = ml[2 * g + 1];
	}
}

// Block (head h, token j): out[j][h] = Σ_c e^(m_c−M)·o_c / Σ_c e^(m_c−M)·l_c.
// The first warp finds M and the weights e^(m_c−M) of the chunks (dynamic
// shared memory, nChunks floats; 0 for an empty chunk), then a thread per
// dimension sums the weighted partials.
extern "C" __global__ void __launch_bounds__(EATT_THREADS)
eattn_combine(float* out, const float* po, const float* pml, int nHeads, int hd, int nChunks) {
	PDL_START();
	extern __shared__ float wgt[];
	__shared__ float invL;
	const int h = blockIdx.x, j = blockIdx.y, lane = threadIdx.x & 31;
	const size_t base = (size_t)j * nChunks * nHeads + h;
	if (threadIdx.x < 32) {
		float M = NEG_INF;
		for (int c = lane; c < nChunks; c += 32) M = fmaxf(M, pml[(base + (size_t)c * nHeads) * 2]);
		M = warp_max(M);
		float L = 0.f;
		for (int c = lane; c < nChunks; c += 32) {
			const float* ml = pml + (base + (size_t)c * nHeads) * 2;
			const float e = ml[1] != 0.f ? expf(ml[0] - M) : 0.f;
			wgt[c] = e;
			L += e * ml[1];
		}
		L = warp_sum(L);
		if (lane == 0) invL = 1.0f / L;
	}
	__syncthreads();
	for (int dd = threadIdx.x; dd < hd; dd += blockDim.x) {
		float o = 0.f;
		for (int c = 0; c < nChunks; c++) o += wgt[c] * po[(base + (size_t)c * nHeads) * hd + dd];
		out[((size_t)j * nHeads + h) * hd + dd] = o * invL;
	}
}

// ---- greedy pick on the device ---------------------------------------------

// WARP_ARGMAX(best, at) leaves every lane the warp's largest best and its
// index at (the smallest of equals), by xor butterfly.
#define WARP_ARGMAX(best, at)                                   \
	_Pragma("unroll") for (int o = 16; o > 0; o >>= 1) {        \
		const float ov = __shfl_xor_sync(0xffffffffu, best, o); \
		const int oi = __shfl_xor_sync(0xffffffffu, at, o);     \
		if (ov > best || (ov == best && oi < at)) {             \
			best = ov;                                          \
			at = oi;                                            \
		}                                                       \
	}

// One block: the index of the largest of x[0..n) (the first of equals) into
// *dst.
extern "C" __global__ void __launch_bounds__(1024) argmax_f32(int* dst, const float* x, int n) {
	PDL_START();
	__shared__ float bv[32];
	__shared__ int bi[32];
	float best = NEG_INF;
	int at = 0x7fffffff;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		const float v = x[i];
		if (v > best) {
			best = v;
			at = i;
		}
	}
	WARP_ARGMAX(best, at);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	if (lane == 0) {
		bv[warp] = best;
		bi[warp] = at;
	}
	__syncthreads();
	if (warp == 0) {
		const int nw = blockDim.x >> 5;
		best = lane < nw ? bv[lane] : NEG_INF;
		at = lane < nw ? bi[lane] : 0x7fffffff;
		WARP_ARGMAX(best, at);
		if (lane == 0) *dst = at;
	}
}

// ---- decode attention: flash-decoding with a fixed number of splits -------

#define DATT_TILE 32 // positions scored per pass of a block's four warps (8 each)
// DATT_VU: the value pass's loads in flight (1 unless a timing experiment
// defines it: DAMASCUS_CUDA_DEFINES=DATT_VU=8).
#ifndef DATT_VU
#define DATT_VU 1
#endif

// DATTN_ENTRY defines kernel name: fn<D> for the head size hd, D = ⌈hd/32⌉
// query values a lane (hd ≤ 128).
#define DATTN_ENTRY(name, fn)                                                                                      \
	extern "C" __global__ void __launch_bounds__(128) name(float* po, float* pml, const float* q, const float* kc, \
	                                                       const float* vc, const int* posp, int nHeads, int nKV,  \
	                                                       int hd, int nctx, float scale) {                        \
		PDL_START();                                                                                                \
		const int pos = *posp;                                                                                      \
		if (hd > 64) {                                                                                              \
			fn<4>(po, pml, q, kc, vc, pos, nHeads, nKV, hd, nctx, scale);                                           \
		} else if (hd > 32) {                                                                                       \
			fn<2>(po, pml, q, kc, vc, pos, nHeads, nKV, hd, nctx, scale);                                           \
		} else {                                                                                                    \
			fn<1>(po, pml, q, kc, vc, pos, nHeads, nKV, hd, nctx, scale);                                           \
		}                                                                                                           \
	}

// DATTN_SPLIT opens dattn and dattn_wv: block (split s of S, KV head kvh)
// takes the G query heads of kvh over positions t0 … t1−1, its share of
// the ctx = pos+1; its partials start at row pbase.
#define DATTN_SPLIT                                                                          \
	const int G = nHeads / nKV, kvh = blockIdx.y, S = gridDim.x, s = blockIdx.x;             \
	const int ctx = pos + 1, per = (ctx + S - 1) / S, t0 = s * per, t1 = min(ctx, t0 + per); \
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;                           \
	const size_t pbase = (size_t)s * nHeads + (size_t)kvh * G

// DATTN_QUERIES follows a dattn kernel's shared declarations: an empty
// split writes its empty partials and is done; otherwise qr holds the
// lane's query values (dattn_load_q).
#define DATTN_QUERIES                       \
	if (t0 >= t1) {                         \
		dattn_empty(po, pml, pbase, G, hd); \
		return;                             \
	}                                       \
	float qr[EATT_MAXG][D];                 \
	dattn_load_q<D>(qr, q, kvh, G, hd, lane)

// dattn_empty writes an empty split's partials (zero sums, max −inf) for
// its G heads from pbase.
__device__ __forceinline__ void dattn_empty(float* po, float* pml, size_t pbase, int G, int hd) {
	for (int i = threadIdx.x; i < G * hd; i += blockDim.x) po[pbase * hd + i] = 0.f;
	for (int g = threadIdx.x; g < G; g += blockDim.x) {
		pml[(pbase + g) * 2] = NEG_INF;
		pml[(pbase + g) * 2 + 1] = 0.f;
	}
}

// dattn_load_q loads a lane's D query values (D·lane …) of each of the G
// heads of KV head kvh into registers, zeros past G and hd.
template <int D>
__device__ __forceinline__ void dattn_load_q(float (&qr)[EATT_MAXG][D], const float* q, int kvh, int G, int hd, int lane) {
#pragma unroll
	for (int g = 0; g < EATT_MAXG; g++)
#pragma unroll
		for (int i = 0; i < D; i++) qr[g][i] = g < G && D * lane + i < hd ? q[((size_t)kvh * G + g) * hd + D * lane + i] : 0.f;
}

// dattn_scores has warp w score its positions 8w … 8w+7 of a tile of L
// (keys kr in registers as the queries qr) into p[g][tt]: scale·q·k, −inf
// past L.
template <int D>
__device__ __forceinline__ void dattn_scores(float (&p)[EATT_MAXG][DATT_TILE], const float (&qr)[EATT_MAXG][D],
                                             const float (&kr)[8][D], int G, int L, int warp, int lane, float scale) {
#pragma unroll
	for (int u = 0; u < 8; u++) {
		const int tt = 8 * warp + u;
#pragma unroll
		for (int g = 0; g < EATT_MAXG; g++) {
			if (g < G) {
				WARP_SCORE(p[g][tt], qr[g], kr[u]);
			}
		}
	}
}

// Block (split s, KV head g) of one token at position *posp: the context's
// ctx = pos+1 positions are cut into gridDim.x equal splits, so that the
// grid (fixed in the recorded step) keeps every block busy at any depth.
// The split is walked in tiles of 32 positions with an online softmax: a
// warp scores 8 positions of a tile (each lane holding D = ⌈hd/32⌉ query
// values of each of the G heads in registers, 8 key rows in flight), a
// warp per head rescales, then a thread per dimension adds the tile's
// weighted values. Partials as eattn_split's, for eattn_combine.
template <int D>
__device__ __forceinline__ void dattn(float* po, float* pml, const float* q, const float* kc, const float* vc, int pos,
                                      int nHeads, int nKV, int hd, int nctx, float scale) {
	DATTN_SPLIT;
	__shared__ float p[EATT_MAXG][DATT_TILE];
	__shared__ float mrun[EATT_MAXG], lrun[EATT_MAXG], alpha[EATT_MAXG];
	DATTN_QUERIES;
	if (tid < EATT_MAXG) {
		mrun[tid] = NEG_INF;
		lrun[tid] = 0.f;
	}
	const float* kh = kc + (size_t)kvh * nctx * hd;
	const float* vh = vc + (size_t)kvh * nctx * hd;
	float o[EATT_MAXG];
#pragma unroll
	for (int g = 0; g < EATT_MAXG; g++) o[g] = 0.f;
	for (int tile = t0; tile < t1; tile += DATT_TILE) {
		const int L = min(DATT_TILE, t1 - tile);
		// Scores: warp w takes positions tile + 8w … tile + 8w + 7.
		float kr[8][D];
#pragma unroll
		for (int u = 0; u < 8; u++) {
			const int tt = 8 * warp + u;
#pragma unroll
			for (int i = 0; i < D; i++) kr[u][i] = tt < L && D * lane + i < hd ? kh[(size_t)(tile + tt) * hd + D * lane + i] : 0.f;
		}
		dattn_scores<D>(p, qr, kr, G, L, warp, lane, scale);
		__syncthreads();
		// Online softmax: a warp per head.
		for (int g = warp; g < G; g += blockDim.x >> 5) {
			const float v = p[g][lane];
			const float mt = warp_max(v), mo = mrun[g], mn = fmaxf(mo, mt);
			const float e = lane < L ? expf(v - mn) : 0.f;
			p[g][lane] = e;
			const float l = warp_sum(e);
			if (lane == 0) {
				const float a = expf(mo - mn); // 0 on the first tile (mo = -inf)
				alpha[g] = a;
				lrun[g] = lrun[g] * a + l;
				mrun[g] = mn;
			}
		}
		__syncthreads();
		// Weighted values: a thread per dimension.
		if (tid < hd) {
			float acc[EATT_MAXG];
#pragma unroll
			for (int g = 0; g < EATT_MAXG; g++) acc[g] = 0.f;
#if DATT_VU > 1
			// DATT_VU positions' values loaded before any is weighted (the
			// same sums in the same order: the same bits).
			for (int t0v = 0; t0v < L; t0v += DATT_VU) {
				float vv[DATT_VU];
#pragma unroll
				for (int u = 0; u < DATT_VU; u++) vv[u] = t0v + u < L ? vh[(size_t)(tile + t0v + u) * hd + tid] : 0.f;
#pragma unroll
				for (int u = 0; u < DATT_VU; u++)
					if (t0v + u < L) {
#pragma unroll
						for (int g = 0; g < EATT_MAXG; g++)
							if (g < G) acc[g] += p[g][t0v + u] * vv[u];
					}
			}
#else
			for (int tt = 0; tt < L; tt++) {
				const float vv = vh[(size_t)(tile + tt) * hd + tid];
#pragma unroll
				for (int g = 0; g < EATT_MAXG; g++)
					if (g < G) acc[g] += p[g][tt] * vv;
			}
#endif
#pragma unroll
			for (int g = 0; g < EATT_MAXG; g++)
				if (g < G) o[g] = o[g] * alpha[g] + acc[g];
		}
		__syncthreads(); // p and alpha are rewritten by the next tile
	}
	if (tid < hd) {
#pragma unroll
		for (int g = 0; g < EATT_MAXG; g++)
			if (g < G) po[(pbase + g) * hd + tid] = o[g];
	}
	if (tid < G) {
		pml[(pbase + tid) * 2] = mrun[tid];
		pml[(pbase + tid) * 2 + 1] = lrun[tid];
	}
}

DATTN_ENTRY(dattn_split, dattn)

// ---- decode attention, every load of a tile in flight at once --------------

// dattn_split's contract (splits, partials for eattn_combine), with its
// latency chain cut: each warp loads the keys AND the values of its 8
// positions of a tile together with nothing between them (one round trip
// to memory a tile, not one a position, as dattn's value pass paid), the
// softmax pieces of the tile are found by every warp alike from the scores
// in shared memory (no barrier between max, sum and weights), the warp
// weights the values it holds (lanes over dimensions), and the four warps'
// sums meet in shared memory once, at the end.
template <int D>
__device__ __forceinline__ void dattn_wv(float* po, float* pml, const float* q, const float* kc, const float* vc, int pos,
                                         int nHeads, int nKV, int hd, int nctx, float scale) {
	DATTN_SPLIT;
	__shared__ float p[EATT_MAXG][DATT_TILE];
	__shared__ float osum[4][EATT_MAXG][32 * D];
	DATTN_QUERIES;
	const float* kh = kc + (size_t)kvh * nctx * hd;
	const float* vh = vc + (size_t)kvh * nctx * hd;
	float o[EATT_MAXG][D], m[EATT_MAXG], l[EATT_MAXG];
#pragma unroll
	for (int g = 0; g < EATT_MAXG; g++) {
		m[g] = NEG_INF;
		l[g] = 0.f;
#pragma unroll
		for (int i = 0; i < D; i++) o[g][i] = 0.f;
	}
	for (int tile = t0; tile < t1; tile += DATT_TILE) {
		const int L = min(DATT_TILE, t1 - tile);
		float kr[8][D], vr[8][D];
#pragma unroll
		for (int u = 0; u < 8; u++) {
			const int tt = 8 * warp + u;
#pragma unroll
			for (int i = 0; i < D; i++) {
				const bool in = tt < L && D * lane + i < hd;
				const size_t at = (size_t)(tile + tt) * hd + D * lane + i;
				kr[u][i] = in ? kh[at] : 0.f;
				vr[u][i] = in ? vh[at] : 0.f;
			}
		}
		dattn_scores<D>(p, qr, kr, G, L, warp, lane, scale);
		__syncthreads();
#pragma unroll
		for (int g = 0; g < EATT_MAXG; g++) {
			if (g < G) {
				const float v = p[g][lane];
				const float mn = fmaxf(m[g], warp_max(v));
				const float e = lane < L ? expf(v - mn) : 0.f;
				const float a = expf(m[g] - mn); // 0 on the first tile (m = -inf)
				l[g] = l[g] * a + warp_sum(e);
				m[g] = mn;
#pragma unroll
				for (int i = 0; i < D; i++) o[g][i] *= a;
#pragma unroll
				for (int u = 0; u < 8; u++) {
					const float wu = __shfl_sync(0xffffffffu, e, 8 * warp + u);
#pragma unroll
					for (int i = 0; i < D; i++) o[g][i] += wu * vr[u][i];
				}
			}
		}
		__syncthreads(); // p is rewritten by the next tile
	}
#pragma unroll
	for (int g = 0; g < EATT_MAXG; g++)
		if (g < G)
#pragma unroll
			for (int i = 0; i < D; i++) osum[warp][g][D * lane + i] = o[g][i];
	__syncthreads();
	for (int i = tid; i < G * hd; i += blockDim.x) {
		const int g = i / hd, dd = i - g * hd;
		po[pbase * hd + i] = ((osum[0][g][dd] + osum[1][g][dd]) + osum[2][g][dd]) + osum[3][g][dd];
	}
	if (tid == 0) {
#pragma unroll
		for (int g = 0; g < EATT_MAXG; g++) {
			if (g < G) {
				pml[(pbase + g) * 2] = m[g];
				pml[(pbase + g) * 2 + 1] = l[g];
			}
		}
	}
}

DATTN_ENTRY(dattn_wv_split, dattn_wv)

// ---- a matvec with the residual add and the next norm as its tail ---------

// The residual add, the rmsnorm and the quantization of add_rmsnorm (one
// row, from 0) by the block that runs it, with add_rmsnorm's arithmetic
// bit for bit whatever the block's size: the sum of squares is split as vt
// = blockFor(dim) threads split it (virtual thread v sums i = v, v+vt, …,
// then each virtual warp's butterfly, then one warp over the warps' sums),
// each warp of the block taking the virtual warps w, w+nwarps, …. xs holds
// dim floats of shared memory, red 32 doubles. add was written by the other
// blocks of this grid: read past L1.
__device__ __forceinline__ void norm_tail(float* x, const float* add, float* xn, const float* nw, int dim, float eps,
                                          u8* xq, int qt, int vt, float* xs, double* red) {
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
#pragma unroll 4
	for (int i = tid; i < dim; i += blockDim.x) xs[i] = __fadd_rn(x[i], __ldcg(add + i));
	__syncthreads();
	for (int i = tid; i < dim; i += blockDim.x) x[i] = xs[i];
	for (int vw = warp; vw < vt / 32; vw += nwarps) {
		double ss = 0;
		for (int i = vw * 32 + lane; i < dim; i += vt) {
			const float v = xs[i];
			ss += (double)v * v;
		}
		ss = warp_sum_d(ss);
		if (lane == 0) red[vw] = ss;
	}
	__syncthreads();
	const double tot = warp_sum_d(lane < vt / 32 ? red[lane] : 0.0);
	const float scale = 1.0f / sqrtf((float)(tot / dim) + eps);
	__syncthreads(); // every warp has read red
	for (int i = tid; i < dim; i += blockDim.x) {
		const float v = __fmul_rn(__fmul_rn(xs[i], scale), nw[i]);
		xs[i] = v;
		xn[i] = v;
	}
	__syncthreads();
	quantize_row(xq, xs, 0, dim, qt);
}

// mv_norm: dst = W·xa (format f as mv_multi's, one warp a row), then the
// grid's last block to finish runs norm_tail(x, dst, …): the product is
// the residual's addend, and the norm and quantization that the next
// product needs follow without a launch of their own. *counter counts the
// finished blocks and is left at 0 for the next launch (a recorded graph
// replays it). Dynamic shared memory: dim floats.
extern "C" __global__ void __launch_bounds__(256) mv_norm(float* dst, const u8* w, int rows, int f, const u8* xa, int k,
                                                          float* x, float* xn, const float* nw, int dim, float eps,
                                                          u8* xq, int qt, int vt, unsigned* counter) {
	extern __shared__ float xs[];
	__shared__ double red[32];
	__shared__ bool last;
	mv_seg<0>(f, dst, w, rows, xa, k, blockIdx.x);
	__threadfence(); // this block's rows of dst before its count
	__syncthreads();
	if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == gridDim.x - 1;
	__syncthreads();
	if (!last) return;
	__threadfence(); // every block's rows before the tail reads them
	norm_tail(x, dst, xn, nw, dim, eps, xq, qt, vt, xs, red);
	if (threadIdx.x == 0) *counter = 0;
}
