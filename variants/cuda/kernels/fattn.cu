// fattn.cu: the engine's prefill attention, flash-attention style, in
// float32 on the SIMT cores (no tensor cores: the GPU engine's output stays
// within its float32 agreement with the CPU engine).
//
// A block takes FATT_ROWS = 64 query rows: BQ = 64/G consecutive tokens ×
// the G query heads of one KV head (row r is token tok0 + r/G, head
// kvh·G + r%G; for G = 3 the 64th row is idle). It walks the keys
// 0 … (its last token's position) in tiles of BK positions: each K and V
// tile is read from the cache once for all 64 rows (float4, coalesced)
// into shared memory, the 64×BK score tile is computed with a 4×(BK/16)
// register micro-tile a thread, masked causally per (token, position),
// and an online softmax (running max and sum per row, in registers of the
// four threads that own the row) rescales the 64×D output, which each
// thread accumulates as a 4×(D/16) register micro-tile. The output is
// normalized and written at the end: no combine pass.
//
// Grid (nKV, ceil(n/BQ)); blockIdx.y counts the query tiles from the last
// one, so the tiles with the most keys are dispatched first.
//
// Layout as eattn_split's: q and out [token][head][D], the cache
// [KV head][position][D] with nctx positions, token j at position *posp+j.
// Pointers 16-byte aligned (the Go side checks).

#define FATT_THREADS 256
#define FATT_ROWS 64

template <int D, int BK>
struct fatt_tile {
	static constexpr int QS = D + 4;  // row stride of the Q and K tiles: rows 4 banks apart
	static constexpr int SS = BK + 4; // row stride of the score tile
	static constexpr int TN = BK / 16; // score columns a thread (columns cg + 16j)
	static constexpr int TD = D / 64;  // float4 output groups a thread (dims 4dg + 64k)
	static constexpr int FLOATS = FATT_ROWS * QS + BK * QS + BK * D + FATT_ROWS * SS + 2 * FATT_ROWS;
};

template <int D, int BK>
__device__ __forceinline__ void fattn(float* __restrict__ out, const float* __restrict__ q, const float* __restrict__ kc,
                                      const float* __restrict__ vc, const int* posp, int n, int nHeads, int nKV, int nctx,
                                      float scale) {
	typedef fatt_tile<D, BK> T;
	static_assert(BK % 16 == 0 && D % 64 == 0, "tile shape");
	extern __shared__ float4 fsh4[];
	float* sh = (float*)fsh4;
	float* Qs = sh;                          // [64][QS]
	float* Ks = Qs + FATT_ROWS * T::QS;      // [BK][QS]
	float* Vs = Ks + BK * T::QS;             // [BK][D]
	float* Ss = Vs + BK * D;                 // [64][SS]
	float* Alpha = Ss + FATT_ROWS * T::SS;   // [64]
	float* Lsum = Alpha + FATT_ROWS;         // [64]

	const int tid = threadIdx.x;
	const int G = nHeads / nKV, BQ = FATT_ROWS / G, rowsUsed = BQ * G;
	const int kvh = blockIdx.x, qt = gridDim.y - 1 - blockIdx.y;
	const int tok0 = qt * BQ, nTok = min(BQ, n - tok0);
	const int pos0 = *posp;
	const int lastPos = pos0 + tok0 + nTok - 1; // the block's keys: 0 … lastPos
	const int nKeys = lastPos + 1;

	// The query tile; rows past the batch (or the idle ones) are zero.
	for (int idx = tid; idx < FATT_ROWS * (D / 4); idx += FATT_THREADS) {
		const int r = idx / (D / 4), c4 = idx % (D / 4);
		float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
		const int tl = r / G;
		if (r < rowsUsed && tl < nTok)
			v = __ldg((const float4*)(q + ((size_t)(tok0 + tl) * nHeads + (size_t)kvh * G + r % G) * D) + c4);
		*(float4*)(Qs + r * T::QS + 4 * c4) = v;
	}

	// Micro-tile coordinates: rows 4rg … 4rg+3 for scores and outputs;
	// score columns cg + 16j; output dims 4dg + 64k … +3.
	const int rg = tid / 16, cg = tid % 16, dg = tid % 16;
	int prow[4]; // each row's position, at most lastPos (the causal mask)
#pragma unroll
	for (int i = 0; i < 4; i++) prow[i] = min(lastPos, pos0 + tok0 + (4 * rg + i) / G);
	// Softmax statistics: row sr, kept by its four threads (lanes 4sr%32 …).
	const int sr = tid / 4, part = tid % 4;
	float mrun = NEG_INF, lrun = 0.f;

	float4 o[4][T::TD];
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int k = 0; k < T::TD; k++) o[i][k] = make_float4(0.f, 0.f, 0.f, 0.f);

	const float* kh = kc + (size_t)kvh * nctx * D;
	const float* vh = vc + (size_t)kvh * nctx * D;
	for (int t0 = 0; t0 < nKeys; t0 += BK) {
		// K and V tiles; positions past lastPos are zero (never NaN: a
		// masked probability is 0, and 0·NaN would be NaN).
		for (int idx = tid; idx < BK * (D / 4); idx += FATT_THREADS) {
			const int r = idx / (D / 4), c4 = idx % (D / 4);
			float4 kv = make_float4(0.f, 0.f, 0.f, 0.f), vv = kv;
			if (t0 + r < nKeys) {
				kv = __ldg((const float4*)(kh + (size_t)(t0 + r) * D) + c4);
				vv = __ldg((const float4*)(vh + (size_t)(t0 + r) * D) + c4);
			}
			*(float4*)(Ks + r * T::QS + 4 * c4) = kv;
			*(float4*)(Vs + r * D + 4 * c4) = vv;
		}
		__syncthreads();
		// Scores.
		float s[4][T::TN];
#pragma unroll
		for (int i = 0; i < 4; i++)
#pragma unroll
			for (int j = 0; j < T::TN; j++) s[i][j] = 0.f;
#pragma unroll 4
		for (int d = 0; d < D; d += 4) {
			float4 qv[4], kv[T::TN];
#pragma unroll
			for (int i = 0; i < 4; i++) qv[i] = *(const float4*)(Qs + (4 * rg + i) * T::QS + d);
#pragma unroll
			for (int j = 0; j < T::TN; j++) kv[j] = *(const float4*)(Ks + (cg + 16 * j) * T::QS + d);
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < T::TN; j++) {
					float a = s[i][j];
					a = fmaf(qv[i].x, kv[j].x, a);
					a = fmaf(qv[i].y, kv[j].y, a);
					a = fmaf(qv[i].z, kv[j].z, a);
					a = fmaf(qv[i].w, kv[j].w, a);
					s[i][j] = a;
				}
		}
#pragma unroll
		for (int i = 0; i < 4; i++)
#pragma unroll
			for (int j = 0; j < T::TN; j++) {
				const int t = t0 + cg + 16 * j;
				Ss[(4 * rg + i) * T::SS + cg + 16 * j] = t <= prow[i] ? s[i][j] * scale : NEG_INF;
			}
		__syncthreads();
		// Online softmax of row sr. Position 0 is in every row's range, so
		// the running max is finite from the first tile on; alpha is then
		// e^(−inf) = 0 and a masked score gives e^(−inf) = 0.
		{
			float mx = NEG_INF;
#pragma unroll
			for (int k = 0; k < BK / 4; k++) mx = fmaxf(mx, Ss[sr * T::SS + part + 4 * k]);
			mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
			mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
			const float mn = fmaxf(mrun, mx);
			float l = 0.f;
#pragma unroll
			for (int k = 0; k < BK / 4; k++) {
				float* p = Ss + sr * T::SS + part + 4 * k;
				const float e = expf(*p - mn);
				*p = e;
				l += e;
			}
			l += __shfl_xor_sync(0xffffffffu, l, 1);
			l += __shfl_xor_sync(0xffffffffu, l, 2);
			const float a = expf(mrun - mn);
			lrun = lrun * a + l;
			mrun = mn;
			if (part == 0) Alpha[sr] = a;
		}
		__syncthreads();
		// O = O·alpha + P·V.
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const float a = Alpha[4 * rg + i];
#pragma unroll
			for (int k = 0; k < T::TD; k++) {
				o[i][k].x *= a;
				o[i][k].y *= a;
				o[i][k].z *= a;
				o[i][k].w *= a;
			}
		}
#pragma unroll 2
		for (int c = 0; c < BK; c += 4) {
			float4 p[4];
#pragma unroll
			for (int i = 0; i < 4; i++) p[i] = *(const float4*)(Ss + (4 * rg + i) * T::SS + c);
#pragma unroll
			for (int cc = 0; cc < 4; cc++) {
#pragma unroll
				for (int k = 0; k < T::TD; k++) {
					const float4 v = *(const float4*)(Vs + (c + cc) * D + 4 * dg + 64 * k);
#pragma unroll
					for (int i = 0; i < 4; i++) {
						const float pc = cc == 0 ? p[i].x : cc == 1 ? p[i].y : cc == 2 ? p[i].z : p[i].w;
						o[i][k].x = fmaf(pc, v.x, o[i][k].x);
						o[i][k].y = fmaf(pc, v.y, o[i][k].y);
						o[i][k].z = fmaf(pc, v.z, o[i][k].z);
						o[i][k].w = fmaf(pc, v.w, o[i][k].w);
					}
				}
			}
		}
		__syncthreads(); // Ks, Vs, Ss and Alpha are rewritten by the next tile
	}
	if (part == 0) Lsum[sr] = lrun;
	__syncthreads();
#pragma unroll
	for (int i = 0; i < 4; i++) {
		const int r = 4 * rg + i, tl = r / G;
		if (r >= rowsUsed || tl >= nTok) continue;
		const float inv = 1.0f / Lsum[r];
		float* orow = out + ((size_t)(tok0 + tl) * nHeads + (size_t)kvh * G + r % G) * D;
#pragma unroll
		for (int k = 0; k < T::TD; k++)
			*(float4*)(orow + 4 * dg + 64 * k) = make_float4(o[i][k].x * inv, o[i][k].y * inv, o[i][k].z * inv, o[i][k].w * inv);
	}
}

// Heads of 64: key tiles of 64 positions (67.5 KiB of shared memory).
extern "C" __global__ void __launch_bounds__(FATT_THREADS, 2)
fattn_d64(float* out, const float* q, const float* kc, const float* vc, const int* posp, int n, int nHeads, int nKV,
          int nctx, float scale) {
	PDL_START();
	fattn<64, 64>(out, q, kc, vc, posp, n, nHeads, nKV, nctx, scale);
}

// Heads of 128: key tiles of 32 positions (75 KiB of shared memory, two
// blocks an SM).
extern "C" __global__ void __launch_bounds__(FATT_THREADS, 2)
fattn_d128(float* out, const float* q, const float* kc, const float* vc, const int* posp, int n, int nHeads, int nKV,
           int nctx, float scale) {
	PDL_START();
	fattn<128, 32>(out, q, kc, vc, posp, n, nHeads, nKV, nctx, scale);
}
