// dattn.cu: one token's attention over the cache (decode), folded.
//
// The contract is dattn_split's (engine.cu) followed by eattn_combine's: the
// context's ctx = pos+1 positions are cut into DATT_SPLITS equal splits per
// KV head, so that the grid (fixed in the recorded step) keeps every block
// busy at any depth. What differs is the chain of dependent steps a block
// pays, which at decode depths is the kernel's whole cost (ncu on the H200,
// session 12: dattn_split 9% occupancy, 0.09 eligible warps a cycle):
//   - a warp's keys AND values of a pass are loaded at once, 16 bytes a lane
//     (hd = 32·D exactly), before any is used: one round trip a pass;
//   - the warp's P·MG partial scores (P positions × MG heads, = 32) are
//     summed across its lanes in one transposed butterfly (31 shuffles,
//     after which lane j holds score j), not 32 butterflies of 5;
//   - the online softmax stays in the warp's registers, with no barrier
//     between passes; the four warps meet once, in shared memory;
//   - the split combine runs in the last block of a KV head to finish
//     (an arrival count), not in a second kernel.
// Positions are dealt round robin: warp w takes t0 + w + 4u of each pass of
// 4P, so that short splits (8 positions at 256 of context) keep all four
// warps busy.

#define DATT_SPLITS 32 // = DecodeSplits (engine.go)

template <int D> struct fvec;
template <> struct fvec<1> {
	static __device__ __forceinline__ void load(float* r, const float* p) { r[0] = *p; }
};
template <> struct fvec<2> {
	static __device__ __forceinline__ void load(float* r, const float* p) {
		const float2 v = *(const float2*)p;
		r[0] = v.x;
		r[1] = v.y;
	}
};
template <> struct fvec<4> {
	static __device__ __forceinline__ void load(float* r, const float* p) {
		const float4 v = *(const float4*)p;
		r[0] = v.x;
		r[1] = v.y;
		r[2] = v.z;
		r[3] = v.w;
	}
};

// Sum each of the 32 values v[] over the warp's lanes; lane j gets sum j.
// A stage of offset O halves the values a lane holds: it keeps the half its
// lane bit O selects and adds the partner's copy of that half. (A template
// a stage, so that every index is a constant and v stays in registers.)
template <int O> __device__ __forceinline__ void transposed_stage(float (&v)[32], int lane) {
	const bool up = lane & O;
#pragma unroll
	for (int k = 0; k < O; k++) {
		// Values, not addresses, selected: a select of &v[k] or &v[k+O]
		// puts v in local memory.
		const float lo = v[k], hi = v[k + O];
		const float send = up ? lo : hi, keep = up ? hi : lo;
		v[k] = keep + __shfl_xor_sync(0xffffffffu, send, O);
	}
}
__device__ __forceinline__ float transposed_sum32(float (&v)[32], int lane) {
	transposed_stage<16>(v, lane);
	transposed_stage<8>(v, lane);
	transposed_stage<4>(v, lane);
	transposed_stage<2>(v, lane);
	transposed_stage<1>(v, lane);
	return v[0];
}

// Rotates the lane's D values of a head (dims D·lane … D·lane+D−1) at the
// position whose angles cosP and sinP hold (hd/2 each): rope_store's
// arithmetic (engine.cu) to the bit, the pair's other member taken from the
// lane that holds it where it is not this one (neox: 16 lanes away; the
// interleaved pairs of D = 1: the next lane). Every lane must call it.
template <int D>
__device__ __forceinline__ void rope_lane(float (&x)[D], const float* cosP, const float* sinP, int lane, int neox) {
	if (neox) {
		const bool first = lane < 16; // dims below hd/2: the pair's first member
#pragma unroll
		for (int i = 0; i < D; i++) {
			const float xp = __shfl_xor_sync(0xffffffffu, x[i], 16);
			const int pi = D * (lane & 15) + i;
			const float c = cosP[pi], s = sinP[pi];
			x[i] = first ? __fsub_rn(__fmul_rn(x[i], c), __fmul_rn(xp, s)) : __fadd_rn(__fmul_rn(xp, s), __fmul_rn(x[i], c));
		}
	} else if (D == 1) {
		const float xp = __shfl_xor_sync(0xffffffffu, x[0], 1);
		const float c = cosP[lane >> 1], s = sinP[lane >> 1];
		x[0] = (lane & 1) == 0 ? __fsub_rn(__fmul_rn(x[0], c), __fmul_rn(xp, s)) : __fadd_rn(__fmul_rn(xp, s), __fmul_rn(x[0], c));
	} else {
#pragma unroll
		for (int j = 0; j + 1 < D; j += 2) {
			const int pi = (D * lane + j) / 2;
			const float c = cosP[pi], s = sinP[pi], x0 = x[j], x1 = x[j + 1];
			x[j] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
			x[j + 1] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
		}
	}
}

// D floats of a head per lane (hd = 32·D), MG heads per KV head at most
// (the group padded with zero queries), P positions a warp a pass, P·MG = 32.
//
// With ROPE it also does rope_store's work for the token (one
// launch a layer fewer): every block rotates its queries (q as the QKV
// product left them), and the warp whose pass holds position pos takes that
// position's key from k (rotated) and value from v instead of the cache,
// and stores both into the cache for the steps after.
template <int D, int MG, bool ROPE>
__device__ __forceinline__ void dattn_fold(float* out, float* po, float* pml, u32* cnt, const float* q, float* kc,
                                           float* vc, const float* k, const float* v, const float* cosT,
                                           const float* sinT, int neox, int pos, int nHeads, int nKV, int nctx,
                                           float scale) {
	constexpr int HD = 32 * D, P = 32 / MG, NW = 4;
	const int G = nHeads / nKV, kvh = blockIdx.y, s = blockIdx.x;
	const int ctx = pos + 1, per = (ctx + DATT_SPLITS - 1) / DATT_SPLITS, t0 = s * per, t1 = min(ctx, t0 + per);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int gl = lane % MG; // the head of the score a lane holds after the butterfly
	__shared__ float sm[NW][MG], sl[NW][MG];
	__shared__ float so[NW][MG][HD];
	__shared__ float wgt[MG][DATT_SPLITS], invL[MG];
	__shared__ bool last;

	float qr[MG][D], o[MG][D];
#pragma unroll
	for (int g = 0; g < MG; g++) {
		if (g < G) {
			fvec<D>::load(qr[g], q + ((size_t)kvh * G + g) * HD + D * lane);
		} else {
#pragma unroll
			for (int i = 0; i < D; i++) qr[g][i] = 0.f;
		}
#pragma unroll
		for (int i = 0; i < D; i++) o[g][i] = 0.f;
	}
	constexpr bool rope = ROPE; // a template parameter: the plain fold's registers stay its own
	const float *cosP = nullptr, *sinP = nullptr;
	if (rope) {
		cosP = cosT + (size_t)pos * (HD / 2);
		sinP = sinT + (size_t)pos * (HD / 2);
#pragma unroll
		for (int g = 0; g < MG; g++) rope_lane<D>(qr[g], cosP, sinP, lane, neox); // padded heads: 0 stays 0
	}
	float m = NEG_INF, l = 0.f; // of head gl, alike in the lanes that hold it
	const float* kh = kc + (size_t)kvh * nctx * HD + D * lane;
	const float* vh = vc + (size_t)kvh * nctx * HD + D * lane;
	for (int base = t0 + warp; base < t1; base += NW * P) {
		float kr[P][D], vr[P][D];
#pragma unroll
		for (int u = 0; u < P; u++) {
			const int t = base + NW * u;
			if (t < t1) {
				const bool cur = rope && t == pos; // the token's own key and value: not in the cache yet
				fvec<D>::load(kr[u], cur ? k + (size_t)kvh * HD + D * lane : kh + (size_t)t * HD);
				fvec<D>::load(vr[u], cur ? v + (size_t)kvh * HD + D * lane : vh + (size_t)t * HD);
			} else {
#pragma unroll
				for (int i = 0; i < D; i++) kr[u][i] = vr[u][i] = 0.f;
			}
		}
		if (rope) {
#pragma unroll
			for (int u = 0; u < P; u++) {
				// Only the split that holds pos: another split's padded slot
				// (t ≥ t1, zeros) can land on pos too (session 14: the
				// zeros stored there raced the key).
				if (base + NW * u == pos && pos < t1) { // warp-uniform: the rotation's shuffles see every lane
					rope_lane<D>(kr[u], cosP, sinP, lane, neox);
					float* kd = kc + ((size_t)kvh * nctx + pos) * HD + D * lane;
					float* vd = vc + ((size_t)kvh * nctx + pos) * HD + D * lane;
#pragma unroll
					for (int i = 0; i < D; i++) {
						kd[i] = kr[u][i];
						vd[i] = vr[u][i];
					}
				}
			}
		}
		float a[32];
#pragma unroll
		for (int u = 0; u < P; u++)
#pragma unroll
			for (int g = 0; g < MG; g++) {
				float d = 0.f;
#pragma unroll
				for (int i = 0; i < D; i++) d += qr[g][i] * kr[u][i];
				a[u * MG + g] = d;
			}
		// Lane j now scores position slot j / MG for head j % MG = gl.
		// (Every lane sums: a shuffle some lanes skip never returns.)
		const float dot = transposed_sum32(a, lane);
		const bool valid = gl < G && base + NW * (lane / MG) < t1;
		const float sc = valid ? dot * scale : NEG_INF;
		float mt = sc;
#pragma unroll
		for (int off = MG; off < 32; off <<= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
		const float mn = fmaxf(m, mt);
		const float e = valid ? expf(sc - mn) : 0.f;
		const float alpha = mn == NEG_INF ? 1.f : expf(m - mn); // 0 on a head's first pass
		float lt = e;
#pragma unroll
		for (int off = MG; off < 32; off <<= 1) lt += __shfl_xor_sync(0xffffffffu, lt, off);
		l = l * alpha + lt;
		m = mn;
#pragma unroll
		for (int g = 0; g < MG; g++) {
			const float ag = __shfl_sync(0xffffffffu, alpha, g);
#pragma unroll
			for (int i = 0; i < D; i++) o[g][i] *= ag;
#pragma unroll
			for (int u = 0; u < P; u++) {
				const float w = __shfl_sync(0xffffffffu, e, u * MG + g);
#pragma unroll
				for (int i = 0; i < D; i++) o[g][i] += w * vr[u][i];
			}
		}
	}

	// The four warps' partials meet: a split's (m, l, o) per head.
	if (lane < MG) {
		sm[warp][lane] = m;
		sl[warp][lane] = l;
	}
#pragma unroll
	for (int g = 0; g < MG; g++)
#pragma unroll
		for (int i = 0; i < D; i++) so[warp][g][D * lane + i] = o[g][i];
	__syncthreads();
	const size_t pbase = (size_t)s * nHeads + (size_t)kvh * G;
	for (int i = tid; i < G * HD; i += blockDim.x) {
		const int g = i / HD, dd = i - g * HD;
		float M = NEG_INF;
#pragma unroll
		for (int w = 0; w < NW; w++) M = fmaxf(M, sm[w][g]);
		float O = 0.f, L = 0.f;
#pragma unroll
		for (int w = 0; w < NW; w++) {
			const float wt = sl[w][g] != 0.f ? expf(sm[w][g] - M) : 0.f; // an empty warp: 0
			O += wt * so[w][g][dd];
			L += wt * sl[w][g];
		}
		po[(pbase + g) * HD + dd] = O;
		if (dd == 0) {
			pml[(pbase + g) * 2] = M;
			pml[(pbase + g) * 2 + 1] = L;
		}
	}

	// The last split of this KV head to finish combines all of them
	// (eattn_combine's arithmetic); the others are done.
	__threadfence();
	__syncthreads();
	if (tid == 0) last = atomicAdd(&cnt[kvh], 1u) == DATT_SPLITS - 1;
	__syncthreads();
	if (!last) return;
	__threadfence();
	const size_t hbase = (size_t)kvh * G;
	for (int g = warp; g < G; g += NW) {
		const float* ml = pml + ((size_t)lane * nHeads + hbase + g) * 2; // lane = split
		const float mc = __ldcg(ml), lc = __ldcg(ml + 1);
		const float M = warp_max(mc);
		const float e = lc != 0.f ? expf(mc - M) : 0.f;
		wgt[g][lane] = e;
		const float L = warp_sum(e * lc);
		if (lane == 0) invL[g] = 1.0f / L;
	}
	__syncthreads();
	for (int i = tid; i < G * HD; i += blockDim.x) {
		const int g = i / HD, dd = i - g * HD;
		float v[DATT_SPLITS];
#pragma unroll
		for (int c = 0; c < DATT_SPLITS; c++) v[c] = __ldcg(po + ((size_t)c * nHeads + hbase + g) * HD + dd);
		float O = 0.f;
#pragma unroll
		for (int c = 0; c < DATT_SPLITS; c++) O += wgt[g][c] * v[c];
		out[(hbase + g) * HD + dd] = O * invL[g];
	}
	if (tid == 0) cnt[kvh] = 0; // for the next launch: every split of this one has counted
}

#define DATT_FOLD(D, MG)                                                                                           \
	extern "C" __global__ void __launch_bounds__(128)                                                              \
	    dattn_fold_d##D##_g##MG(float* out, float* po, float* pml, u32* cnt, const float* q, float* kc, float* vc,  \
	                            const int* posp, int nHeads, int nKV, int nctx, float scale) {                       \
		PDL_START();                                                                                           \
		dattn_fold<D, MG, false>(out, po, pml, cnt, q, kc, vc, nullptr, nullptr, nullptr, nullptr, 0, *posp,      \
		                         nHeads, nKV, nctx, scale);                                                    \
	}
DATT_FOLD(1, 4)
DATT_FOLD(2, 4)
DATT_FOLD(4, 4)
DATT_FOLD(1, 8)
DATT_FOLD(2, 8)
DATT_FOLD(4, 8)

// dattn_foldr: the same with rope_store's work (RopeDecodeAttention).
#define DATT_FOLDR(D, MG)                                                                                          \
	extern "C" __global__ void __launch_bounds__(128)                                                              \
	    dattn_foldr_d##D##_g##MG(float* out, float* po, float* pml, u32* cnt, const float* q, float* kc, float* vc, \
	                             const float* k, const float* v, const float* cosT, const float* sinT, int neox,     \
	                             const int* posp, int nHeads, int nKV, int nctx, float scale) {                      \
		PDL_START();                                                                                           \
		dattn_fold<D, MG, true>(out, po, pml, cnt, q, kc, vc, k, v, cosT, sinT, neox, *posp, nHeads, nKV, nctx,   \
		                        scale);                                                                        \
	}
DATT_FOLDR(1, 4)
DATT_FOLDR(2, 4)
DATT_FOLDR(4, 4)
DATT_FOLDR(1, 8)
DATT_FOLDR(2, 8)
DATT_FOLDR(4, 8)
