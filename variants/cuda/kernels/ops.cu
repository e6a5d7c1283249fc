// ops.cu: the float32 vector ops, with ggml's (and the naive variants')
// arithmetic: sums of squares and softmax sums in double, the rest in float.

__device__ __forceinline__ float block_max(float v, float* red) {
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) red[warp] = v;
	__syncthreads();
	const int nw = blockDim.x >> 5;
	v = lane < nw ? red[lane] : NEG_INF;
	return warp_max(v);
}

// One block: dst[i] = x[i] / sqrt(mean(x²)+eps) · w[i].
extern "C" __global__ void __launch_bounds__(1024) rmsnorm_f32(float* dst, const float* x, const float* w, int n, float eps) {
	__shared__ double red[32];
	double ss = 0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		const double v = x[i];
		ss += v * v;
	}
	ss = block_sum_d(ss, red);
	const float mean = (float)(ss / n);
	const float scale = 1.0f / sqrtf(mean + eps);
	for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = x[i] * scale * w[i];
}

extern "C" __global__ void silu_mul_f32(float* dst, const float* g, const float* u, int n) {
	PDL_START();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const float v = g[i];
		dst[i] = v / (1.0f + expf(-v)) * u[i];
	}
}

// One block, in place.
extern "C" __global__ void __launch_bounds__(1024) softmax_f32(float* x, int n) {
	__shared__ double red[32];
	float m = NEG_INF;
	for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, x[i]);
	m = block_max(m, (float*)red);
	double s = 0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		const float e = expf(x[i] - m);
		x[i] = e;
		s += e;
	}
	s = block_sum_d(s, red);
	const float inv = (float)(1.0 / s);
	for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] *= inv;
}

// One thread per rotated pair: (x[2i], x[2i+1]) of each head, or
// (x[i], x[i+d/2]) in the NeoX layout.
extern "C" __global__ void rope_f32(float* x, int nHeads, int headDim, const float* cs, const float* sn, int neox) {
	const int half = headDim / 2;
	const int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= nHeads * half) return;
	const int h = idx / half, i = idx - h * half;
	float* head = x + (size_t)h * headDim;
	const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
	const float x0 = head[a], x1 = head[b], c = cs[i], s = sn[i];
	head[a] = x0 * c - x1 * s;
	head[b] = x0 * s + x1 * c;
}
