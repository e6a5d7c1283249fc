// attention.cu: one query token's grouped-query attention over a float32 KV
// cache, split over the context (flash-decoding). attn_split: block
// (chunk c, KV head g) scores its chunk of positions for the G query heads
// sharing g, and writes each head's partial max m, partial sum l and
// unnormalized output o (relative to m); attn_combine: per head,
// out = Σ_c e^(m_c−M)·o_c / Σ_c e^(m_c−M)·l_c with M = max_c m_c.

#define ATT_THREADS 128
#define ATT_G 8 // query heads handled per pass over a key or value row

// Shared memory: q of the group (G·headDim), scores (G·chunk), m and l (2G).
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
attn_split(float* po, float* pml, const float* q, const float* k, const float* v, int nHeads, int nKV, int headDim,
           int nCtx, float scale, int chunk) {
	extern __shared__ float sh[];
	const int G = nHeads / nKV, kvh = blockIdx.y, c = blockIdx.x;
	const int t0 = c * chunk, L = min(chunk, nCtx - t0);
	const int stride = nKV * headDim;
	float* qs = sh;
	float* sc = qs + G * headDim;
	float* ml = sc + G * chunk;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = ATT_THREADS / 32;
	for (int i = tid; i < G * headDim; i += ATT_THREADS) qs[i] = q[(size_t)kvh * G * headDim + i];
	__syncthreads();
	// Scores: a warp per position, lanes over the head dimension.
	for (int tt = warp; tt < L; tt += nw) {
		const float* kr = k + (size_t)(t0 + tt) * stride + (size_t)kvh * headDim;
		for (int g0 = 0; g0 < G; g0 += ATT_G) attn_scores<ATT_G>(kr, qs, sc, g0, G, headDim, chunk, tt, scale, lane);
	}
	__syncthreads();
	// Softmax pieces: a warp per query head.
	attn_softmax_pieces(sc, ml, G, L, chunk, warp, lane, nw);
	__syncthreads();
	// Weighted values: a thread per output dimension.
	for (int dd = tid; dd < headDim; dd += ATT_THREADS) {
		for (int g0 = 0; g0 < G; g0 += ATT_G) {
			float o[ATT_G];
#pragma unroll
			for (int g = 0; g < ATT_G; g++) o[g] = 0.f;
			for (int tt = 0; tt < L; tt++) {
				const float vv = v[(size_t)(t0 + tt) * stride + (size_t)kvh * headDim + dd];
#pragma unroll
				for (int g = 0; g < ATT_G; g++)
					if (g0 + g < G) o[g] += sc[(g0 + g) * chunk + tt] * vv;
			}
#pragma unroll
			for (int g = 0; g < ATT_G; g++)
				if (g0 + g < G) po[((size_t)c * nHeads + kvh * G + g0 + g) * headDim + dd] = o[g];
		}
	}
	for (int g = tid; g < G; g += ATT_THREADS) {
		pml[((size_t)c * nHeads + kvh * G + g) * 2] = ml[2 * g];
		pml[((size_t)c * nHeads + kvh * G + g) * 2 + 1] = ml[2 * g + 1];
	}
}

extern "C" __global__ void __launch_bounds__(ATT_THREADS)
attn_combine(float* out, const float* po, const float* pml, int nHeads, int headDim, int nChunks) {
	const int h = blockIdx.x;
	float M = NEG_INF;
	for (int c = 0; c < nChunks; c++) M = fmaxf(M, pml[((size_t)c * nHeads + h) * 2]);
	float L = 0.f;
	for (int c = 0; c < nChunks; c++) {
		const float* ml = pml + ((size_t)c * nHeads + h) * 2;
		L += expf(ml[0] - M) * ml[1];
	}
	const float inv = 1.0f / L;
	for (int dd = threadIdx.x; dd < headDim; dd += blockDim.x) {
		float o = 0.f;
		for (int c = 0; c < nChunks; c++)
			o += expf(pml[((size_t)c * nHeads + h) * 2] - M) * po[((size_t)c * nHeads + h) * headDim + dd];
		out[(size_t)h * headDim + dd] = o * inv;
	}
}
