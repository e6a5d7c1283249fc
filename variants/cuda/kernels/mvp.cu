// mvp.cu: a single token's products with the step before them as their
// prologue (cuda-pro). Between two products of a decode step the engine
// ran one small kernel (the residual add and norm with its quantization,
// the SwiGLU with its quantization, the attention output's quantization),
// and on the H200 each such launch cost 4–6 µs of a 2 ms step (session
// 14's ablation), far more than its arithmetic. Here every block of the
// product does that step itself, for the whole row, into its own shared
// memory (the row is a few KB from L2), then runs mv_xs's products over
// it: the launch goes, the arithmetic stays bit for bit the kernel's it
// replaces (add_rmsnorm, silu_mul_q, quantize_q8_k), and the products are
// q4k_xs/q6k_xs, cuda's sums. Blocks loop over groups of rows (a grid of
// what fits on the GPU at once), so the row is prepared once a block, not
// once a group.
//
// The prologue, by mode:
//   0 STAGE  the Q8_K row xq as mv_xs stages it;
//   1 QUANT  the float row xf quantized (quantize_q8_k);
//   2 NORM   x += add where add is set (written back by the last block to
//            read x: an atomic arrival count, left 0), then normalized with
//            nw and quantized (add_rmsnorm with its quantization, its sum
//            of squares in the order of its blockFor(k) threads);
//   3 SILU   silu(g)·u (g = xf) quantized (silu_mul_q).
// With MVP_EARLY (the default 1) each warp asks L2 for the lines of its
// first rows' first step before it waits for the kernel before it.

#define MVP_WARPS 8
#define MVP_THREADS (32 * MVP_WARPS)
#ifndef MVP_EARLY
#define MVP_EARLY 1
#endif

// mvp_shared is the dynamic shared memory of a row of k values: the float
// row (not for STAGE), then the quantized planes.
__host__ __device__ __forceinline__ int mvp_shared(int k, int mode) { return (mode == 0 ? 0 : 4 * k) + xs_shared(k); }

// mvp_prologue leaves the row of k values, quantized as Q8_K, in planes.
__device__ __forceinline__ void mvp_prologue(int mode, u8* planes, float* xs, const u8* __restrict__ xq,
                                             const float* __restrict__ xf, float* x, const float* __restrict__ add,
                                             const float* __restrict__ nw, float eps, const float* __restrict__ uf,
                                             u32* counter, int k, double* red, u32* last) {
	const int nb = k / QK_K, tid = threadIdx.x, warp = tid >> 5;
	if (mode == 0) {
		stage_q8k(planes, xq, nb);
		return;
	}
	if (mode == 1) {
		for (int i = tid; i < k; i += MVP_THREADS) xs[i] = xf[i];
	} else if (mode == 3) {
		for (int i = tid; i < k; i += MVP_THREADS) {
			const float v = xf[i];
			xs[i] = v / (1.0f + expf(-v)) * uf[i];
		}
	} else {
		for (int i = tid; i < k; i += MVP_THREADS) {
			float v = x[i];
			if (add) v = __fadd_rn(v, add[i]);
			xs[i] = v;
		}
		__syncthreads();
		if (add) { // every block has read x: the last one writes x + add
			if (tid == 0) {
				__threadfence();
				*last = atomicAdd(counter, 1u) == gridDim.x - 1;
			}
			__syncthreads();
			if (*last) {
				for (int i = tid; i < k; i += MVP_THREADS) x[i] = xs[i];
				if (tid == 0) *counter = 0;
			}
		}
		// add_rmsnorm's sum of squares, in the order of its blockFor(k) threads.
		const double ss = sumsq_as_vb(xs, k, min(1024, max(32, (k + 31) / 32 * 32)), MVP_THREADS, red);
		const float scale = 1.0f / sqrtf((float)(ss / k) + eps);
		for (int i = tid; i < k; i += MVP_THREADS) xs[i] = __fmul_rn(__fmul_rn(xs[i], scale), nw[i]);
	}
	__syncthreads();
	u8* sq = planes;
	float* sd = (float*)(planes + QK_K * nb);
	i16* sb = (i16*)(planes + (QK_K + 4) * nb);
	for (int b = warp; b < nb; b += MVP_WARPS) warp_q8_k_planes(sq + QK_K * b, sd + b, sb + 16 * b, xs + QK_K * b);
}

// mvp_early asks L2 for the lines of the first step of rows row0 … row0+R-1
// of w (format f, k values): a lane a 128-byte line.
template <int R>
__device__ __forceinline__ void mvp_early(int f, const u8* w, int rows, int row0, int k) {
#if MVP_EARLY
	if (row0 >= rows) return;
	const int lane = threadIdx.x & 31, nb = k / QK_K;
	const size_t rb = f == 0 ? (size_t)144 * nb : q6k_row_bytes(nb);
	const int first = f == 0 ? 144 * min(nb, 4) : 192 * min(nb, 8); // a warp's first step
	const int lines = (first + 127) / 128;
#pragma unroll
	for (int r = 0; r < R; r++) {
		const u8* p = w + (size_t)min(row0 + r, rows - 1) * rb;
		if (lane < lines) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + 128 * lane));
	}
#endif
}

template <int R>
__device__ __forceinline__ void mv_pro(int mode, const u8* xq, const float* xf, float* x, const float* add,
                                       const float* nw, float eps, const float* uf, u32* counter, int k, float* d0,
                                       const u8* w0, int r0, int f0, float* d1, const u8* w1, int r1, int f1,
                                       float* d2, const u8* w2, int r2, int f2) {
	extern __shared__ __align__(16) u8 mvp_sm[];
	__shared__ double red[32];
	__shared__ u32 last;
	const int per = MVP_WARPS * R;
	const int g0 = (r0 + per - 1) / per, g1 = (r1 + per - 1) / per, g2 = (r2 + per - 1) / per;
	const int warp = threadIdx.x >> 5;
	PDL_PRE();
	if (blockIdx.x < g0) {
		mvp_early<R>(f0, w0, r0, (blockIdx.x * MVP_WARPS + warp) * R, k);
	} else if (blockIdx.x < g0 + g1) {
		mvp_early<R>(f1, w1, r1, ((blockIdx.x - g0) * MVP_WARPS + warp) * R, k);
	} else if (blockIdx.x < g0 + g1 + g2) {
		mvp_early<R>(f2, w2, r2, ((blockIdx.x - g0 - g1) * MVP_WARPS + warp) * R, k);
	}
	PDL_POST();
	u8* planes = mvp_sm + (mode == 0 ? 0 : 4 * k);
	mvp_prologue(mode, planes, (float*)mvp_sm, xq, xf, x, add, nw, eps, uf, counter, k, red, &last);
	__syncthreads();
	for (int g = blockIdx.x; g < g0 + g1 + g2; g += gridDim.x) {
		if (g < g0) {
			xs_seg<R>(f0, d0, w0, r0, k, g, planes);
		} else if (g < g0 + g1) {
			xs_seg<R>(f1, d1, w1, r1, k, g - g0, planes);
		} else {
			xs_seg<R>(f2, d2, w2, r2, k, g - g0 - g1, planes);
		}
	}
}

// Entry points: mv_pro1, mv_pro2 (rows a warp), at least B blocks an SM.
#define MVP_ENTRY(R, B)                                                                                               \
	extern "C" __global__ void __launch_bounds__(MVP_THREADS, B) mv_pro##R(                                           \
	    int mode, const u8* xq, const float* xf, float* x, const float* add, const float* nw, float eps,             \
	    const float* uf, u32* counter, int k, float* d0, const u8* w0, int r0, int f0, float* d1, const u8* w1,      \
	    int r1, int f1, float* d2, const u8* w2, int r2, int f2) {                                                   \
		mv_pro<R>(mode, xq, xf, x, add, nw, eps, uf, counter, k, d0, w0, r0, f0, d1, w1, r1, f1, d2, w2, r2, f2);  \
	}
MVP_ENTRY(1, 4)
MVP_ENTRY(2, 3)
