// quantize.cu: float32 activations to ggml's Q8_0 and Q8_K blocks, with
// the reference quantizers' roundings (model/quant: quantize_row_*_ref).

// What C's (and Go's) float-to-int conversion gives on x86, where the
// reference quantizers run: the value when it fits, else 0x80000000 (for
// infinities and NaN too, which subnormal inputs make of x/d).
__device__ __forceinline__ int x86_int(float r) {
	return (r >= -2147483648.0f && r < 2147483648.0f) ? (int)r : (int)0x80000000;
}

// ggml's nearest_int: round to nearest even by adding 1.5·2^23 and reading
// the mantissa; for infinities and NaN it gives what ggml's does (-2^22).
__device__ __forceinline__ int nearest_int(float f) {
	const float v = __fadd_rn(f, 12582912.0f);
	return (__float_as_int(v) & 0x007fffff) - 0x00400000;
}

// One warp per 32-value block: d = amax/127 as a half, q = round(x/d)
// (half away from zero). dst blocks are 34 bytes, 2-byte aligned.
// warp_q8_0 is one block by one whole warp: x its 32 values, y its bytes.
__device__ __forceinline__ void warp_q8_0(u8* y, const float* x) {
	const int lane = threadIdx.x & 31;
	const float v = x[lane];
	const float amax = warp_max(fabsf(v));
	const float d = amax / 127.0f;
	const float id = d != 0.0f ? 1.0f / d : 0.0f;
	if (lane == 0) *(u16*)y = f2h(d);
	y[2 + lane] = (u8)x86_int(roundf(v * id));
}

extern "C" __global__ void quantize_q8_0(u8* dst, const float* x, int nblocks) {
	PDL_START();
	const int b = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	if (b >= nblocks) return;
	warp_q8_0(dst + (size_t)b * 34, x + (size_t)b * 32);
}

// One warp per 256-value block, eight consecutive values a lane: max is the
// value of largest magnitude (the first of equals), iscale = -127/max,
// q = min(127, nearest-even(iscale·x)), d = 1/iscale, bsums = sums of 16 q.
// An all-zero block is all zeros. dst blocks are 292 bytes, 4-byte aligned.
// warp_q8_k is one block by one whole warp: x its 256 values (16-byte
// aligned), y its bytes (4-byte aligned).
//
// warp_q8_k_lane is the arithmetic: the lane's eight quants packed in lo
// and hi, the sum of lanes 2g and 2g+1's sixteen in s (even lanes), and d;
// warp_q8_k stores it as ggml's block, warp_q8_k_planes as mv_pro's planes.
__device__ __forceinline__ void warp_q8_k_lane(const float* x, u32& lo, u32& hi, int& s, float& d) {
	const int lane = threadIdx.x & 31;
	const float4* xp = (const float4*)(x + 8 * lane);
	const float4 u = xp[0], w = xp[1];
	const float v[8] = {u.x, u.y, u.z, u.w, w.x, w.y, w.z, w.w};
	float amax = 0.f, maxv = 0.f;
	int at = 0; // index of maxv within the block
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const float a = fabsf(v[i]);
		if (a > amax) {
			amax = a;
			maxv = v[i];
			at = 8 * lane + i;
		}
	}
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) {
		const float oa = __shfl_xor_sync(0xffffffffu, amax, o);
		const float om = __shfl_xor_sync(0xffffffffu, maxv, o);
		const int oat = __shfl_xor_sync(0xffffffffu, at, o);
		if (oa > amax || (oa == amax && oat < at)) {
			amax = oa;
			maxv = om;
			at = oat;
		}
	}
	int q[8];
	d = 0.f;
	if (amax == 0.f) {
#pragma unroll
		for (int i = 0; i < 8; i++) q[i] = 0;
	} else {
		const float iscale = -127.0f / maxv;
#pragma unroll
		for (int i = 0; i < 8; i++) q[i] = (i8)min(127, nearest_int(__fmul_rn(iscale, v[i]))); // stored as int8, summed so
		d = 1.0f / iscale;
	}
	lo = 0, hi = 0;
	s = 0;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		lo |= (u32)(u8)q[i] << (8 * i);
		hi |= (u32)(u8)q[4 + i] << (8 * i);
		s += q[i] + q[4 + i];
	}
	s += __shfl_xor_sync(0xffffffffu, s, 1); // the 16 values of lanes 2g and 2g+1
}

__device__ __forceinline__ void warp_q8_k(u8* y, const float* x) {
	const int lane = threadIdx.x & 31;
	u32 lo, hi;
	int s;
	float d;
	warp_q8_k_lane(x, lo, hi, s, d);
	*(u32*)(y + 4 + 8 * lane) = lo;
	*(u32*)(y + 8 + 8 * lane) = hi;
	if ((lane & 1) == 0) *(i16*)(y + 260 + lane) = (i16)s;
	if (lane == 0) *(float*)y = d;
}

// warp_q8_k_planes is warp_q8_k into planes: the 256 quants at sq, d at
// *sd, the sixteen sums at sb.
__device__ __forceinline__ void warp_q8_k_planes(u8* sq, float* sd, i16* sb, const float* x) {
	const int lane = threadIdx.x & 31;
	u32 lo, hi;
	int s;
	float d;
	warp_q8_k_lane(x, lo, hi, s, d);
	*(uint2*)(sq + 8 * lane) = make_uint2(lo, hi);
	if ((lane & 1) == 0) sb[lane >> 1] = (i16)s;
	if (lane == 0) *sd = d;
}

extern "C" __global__ void quantize_q8_k(u8* dst, const float* x, int nblocks) {
	PDL_START();
	const int b = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	if (b >= nblocks) return;
	warp_q8_k(dst + (size_t)b * 292, x + (size_t)b * QK_K);
}
