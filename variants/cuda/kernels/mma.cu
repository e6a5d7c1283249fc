// mma.cu: prefill products on the tensor cores (int8 mma.sync), MMQ style:
// a block takes 64 weight rows × 64 tokens; per super-block of 256 values
// the rows' quants are unpacked to int8 and the tokens' Q8_K quants copied
// into shared memory, each warp multiplies its 16 rows by the 64 tokens
// (m16n8k32 for Q4_K's 32-value sub-blocks, m16n8k16 for Q6_K's 16), and
// the integer sums are scaled per sub-block in float: the scale terms and
// the min (or -32 offset) terms summed apart and subtracted at the end.
// dst[j*ldd + r] = W[r]·X[j] for r < rows, j < n.

#define MMA_BM 64
#define MMA_BN 64
#define MMA_LD (QK_K + 16) // shared row stride in bytes: padded against bank conflicts

__device__ __forceinline__ void mma_k32(int c[4], const u32 a[4], const u32 b[2]) {
	asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
	             : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
	             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_k16(int c[4], const u32 a[2], u32 b) {
	asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
	             : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
	             : "r"(a[0]), "r"(a[1]), "r"(b));
}

// The tokens' Q8_K blocks of super-block b: quants into bq, d into xd,
// the 16 sums of 16 into bs (zeros for tokens past n).
__device__ __forceinline__ void mma_load_x(u8* bq, float* xd, short* bs, const u8* x, int n, int nb, int tok0, int b) {
	const int tid = threadIdx.x;
	for (int i = tid; i < MMA_BN * 16; i += blockDim.x) {
		const int t = i / 16, part = i % 16, tok = tok0 + t;
		uint4 v = make_uint4(0, 0, 0, 0);
		if (tok < n) { // 292-byte blocks are only 4-byte aligned: four word loads
			const u8* p = x + ((size_t)tok * nb + b) * 292 + 4 + 16 * part;
			v = make_uint4(ld4(p), ld4(p + 4), ld4(p + 8), ld4(p + 12));
		}
		*(uint4*)(bq + t * MMA_LD + 16 * part) = v;
	}
	for (int t = tid; t < MMA_BN; t += blockDim.x) {
		const int tok = tok0 + t;
		const u8* xb = x + ((size_t)tok * nb + b) * 292;
		xd[t] = tok < n ? __int_as_float(ld4(xb)) : 0.f;
		for (int s = 0; s < 16; s++) bs[t * 16 + s] = tok < n ? (short)ld2(xb + 260 + 2 * s) : 0;
	}
}

// Fragment loads from the shared tiles (row-major [row][k] for A, [token][k]
// for B, which is B column-major as mma wants it).
__device__ __forceinline__ u32 lds4(const u8* p) { return *(const u32*)p; }

// The quants of super-block b of rows row0… (MMA_BM of them, zeros past
// rows) into aq as int8, [row][k]. Q4_K: 4 quant bytes a step, 8 values:
// low nibbles to 64g'+l…, high nibbles to 64g'+32+l… (ggml's order within
// each 64).
__device__ __forceinline__ void mma_load_q4k(u8* aq, const u8* w, int rows, int nb, int row0, int b) {
	for (int i = threadIdx.x; i < MMA_BM * 32; i += blockDim.x) {
		const int r = i / 32, j4 = 4 * (i % 32), grp = j4 / 32, l = j4 % 32, row = row0 + r;
		u32 v = 0;
		if (row < rows) v = ld4(w + ((size_t)row * nb + b) * 144 + 16 + j4);
		*(u32*)(aq + r * MMA_LD + 64 * grp + l) = v & 0x0f0f0f0f;
		*(u32*)(aq + r * MMA_LD + 64 * grp + 32 + l) = (v >> 4) & 0x0f0f0f0f;
	}
}

// Q6_K (the device layout of matvec.cu): per half hn and 4 positions
// l…l+3, the bytes ql[64hn+l], ql[64hn+32+l] and qh[32hn+l] give values
// 128hn+32c+l…, unsigned 0…63 (stored +32), or with sub32 signed q − 32
// (bytewise).
__device__ __forceinline__ void mma_load_q6k(u8* aq, const u8* w, int rows, int nb, int row0, int b, bool sub32) {
	const u32 off = sub32 ? 0x20202020 : 0;
	for (int i = threadIdx.x; i < MMA_BM * 16; i += blockDim.x) {
		const int r = i / 16, hn = (i % 16) / 8, l = 4 * (i % 8), row = row0 + r;
		u32 A = 0, B = 0, H = 0;
		if (row < rows) {
			const u8* qb = w + (size_t)row * q6k_row_bytes(nb) + (size_t)192 * b;
			A = ld4(qb + 64 * hn + l);
			B = ld4(qb + 64 * hn + 32 + l);
			H = ld4(qb + 128 + 32 * hn + l);
		}
		u8* ar = aq + r * MMA_LD + 128 * hn + l;
		*(u32*)(ar) = __vsub4((A & 0x0f0f0f0f) | ((H << 4) & 0x30303030), off);
		*(u32*)(ar + 32) = __vsub4((B & 0x0f0f0f0f) | ((H << 2) & 0x30303030), off);
		*(u32*)(ar + 64) = __vsub4(((A >> 4) & 0x0f0f0f0f) | (H & 0x30303030), off);
		*(u32*)(ar + 96) = __vsub4(((B >> 4) & 0x0f0f0f0f) | ((H >> 2) & 0x30303030), off);
	}
}

// mma_store writes a warp's accumulators: rows r0 and r0+8, tokens t0 + 8nt
// and t0 + 8nt + 1 (the C fragment's places), each the scale terms less
// the offset terms.
__device__ __forceinline__ void mma_store(float* dst, int ldd, int rows, int n, int r0, int t0, const float acc[8][4],
                                          const float off[8][4]) {
	const int r1 = r0 + 8;
#pragma unroll
	for (int nt = 0; nt < 8; nt++) {
		const int ta = t0 + 8 * nt, tb = ta + 1;
		if (r0 < rows && ta < n) dst[(size_t)ta * ldd + r0] = acc[nt][0] - off[nt][0];
		if (r0 < rows && tb < n) dst[(size_t)tb * ldd + r0] = acc[nt][1] - off[nt][1];
		if (r1 < rows && ta < n) dst[(size_t)ta * ldd + r1] = acc[nt][2] - off[nt][2];
		if (r1 < rows && tb < n) dst[(size_t)tb * ldd + r1] = acc[nt][3] - off[nt][3];
	}
}

// ---- the kernels' common steps, as macros (the code is spelled out where
// they stand: device functions taking the shared tiles changed what NVRTC
// made of it) -------------------------------------------------------------------

// MMA_START opens every kernel: PDL_START, then the shared tiles of the
// weights' quants aq and the tokens' bq (int8, [row][k] and [token][k]).
#define MMA_START                                    \
	PDL_START();                                     \
	__shared__ __align__(16) u8 aq[MMA_BM * MMA_LD]; \
	__shared__ __align__(16) u8 bq[MMA_BN * MMA_LD]

// MMA_BLOCK ends a kernel's shared tiles with the tokens' 16-value sums bs
// (the declarations' order is the shared memory layout) and names the
// thread's warp, its fragment row g and column pair q4, the block's first
// weight row row0 and token tok0, and a row's super-blocks nb.
#define MMA_BLOCK                                                                                \
	__shared__ short bs[MMA_BN * 16];                                                            \
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, q4 = lane & 3; \
	const int row0 = blockIdx.x * MMA_BM, tok0 = blockIdx.y * MMA_BN, nb = k / QK_K

// MMA_EACH_ROW(zero) runs the statement after it for each of the block's
// rows r the thread takes (weight row row0 + r), or zero past rows.
#define MMA_EACH_ROW(zero)                           \
	for (int r = tid; r < MMA_BM; r += blockDim.x)   \
		if (const int row = row0 + r; row >= rows) { \
			zero;                                    \
		} else

// MMA_X_TILE(b) loads the tokens' tile of super-block b, waits for every
// tile, and names the warp's fragment rows r0 and r1 = r0 + 8 and their
// quants ar0 and ar1.
#define MMA_X_TILE(b)                              \
	mma_load_x(bq, xd, bs, x, n, nb, tok0, b);     \
	__syncthreads();                               \
	const u8* ar0 = aq + (16 * warp + g) * MMA_LD; \
	const u8* ar1 = ar0 + 8 * MMA_LD;              \
	const int r0 = 16 * warp + g, r1 = r0 + 8

// MMA_A_K32(s) and MMA_A_K16(s) load the warp's A fragment a of sub-block s
// (32 values, Q4_K; 16, Q6_K), its k offset k0.
#define MMA_A_K32(s)                \
	const int k0 = 32 * s + 4 * q4; \
	const u32 a[4] = {lds4(ar0 + k0), lds4(ar1 + k0), lds4(ar0 + k0 + 16), lds4(ar1 + k0 + 16)}
#define MMA_A_K16(s)                \
	const int k0 = 16 * s + 4 * q4; \
	const u32 a[2] = {lds4(ar0 + k0), lds4(ar1 + k0)}

// MMA_TILES_K32(use) and MMA_TILES_K16(use) run use (statements) for each
// n8 tile nt of the tokens, unrolled, with c the warp's integer product of
// a with the tile at k0 (m16n8k32; m16n8k16).
#define MMA_TILES_K32(...)                              \
	_Pragma("unroll") for (int nt = 0; nt < 8; nt++) {  \
		const u8* bp = bq + (8 * nt + g) * MMA_LD + k0; \
		const u32 bb[2] = {lds4(bp), lds4(bp + 16)};    \
		int c[4] = {0, 0, 0, 0};                        \
		mma_k32(c, a, bb);                              \
		__VA_ARGS__                                     \
	}
#define MMA_TILES_K16(...)                                    \
	_Pragma("unroll") for (int nt = 0; nt < 8; nt++) {        \
		const u32 bb = lds4(bq + (8 * nt + g) * MMA_LD + k0); \
		int c[4] = {0, 0, 0, 0};                              \
		mma_k16(c, a, bb);                                    \
		__VA_ARGS__                                           \
	}

// ---- Q4_K ---------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(128)
q4k_mma(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	MMA_START;
	__shared__ float dsc[MMA_BM][8], dmn[MMA_BM][8], xd[MMA_BN];
	MMA_BLOCK;
	float acc[8][4] = {}, accm[8][4] = {};
	for (int b = 0; b < nb; b++) {
		__syncthreads(); // the previous super-block's tiles are read
		mma_load_q4k(aq, w, rows, nb, row0, b);
		MMA_EACH_ROW(for (int s = 0; s < 8; s++) dsc[r][s] = dmn[r][s] = 0.f) {
			const u8* blk = w + ((size_t)row * nb + b) * 144;
			const float d = h2f(ld2(blk)), dmin = h2f(ld2(blk + 2));
			u8 sc[12];
			for (int i = 0; i < 12; i++) sc[i] = blk[4 + i];
			for (int s = 0; s < 8; s++) {
				int m, c;
				q4k_sub_scale(sc, s, c, m);
				dsc[r][s] = d * (float)c;
				dmn[r][s] = dmin * (float)m;
			}
		}
		MMA_X_TILE(b);
#pragma unroll 1
		for (int s = 0; s < 8; s++) {
			MMA_A_K32(s);
			const float s0 = dsc[r0][s], s1 = dsc[r1][s], m0 = dmn[r0][s], m1 = dmn[r1][s];
			MMA_TILES_K32({
				const int t0 = 8 * nt + 2 * q4, t1 = t0 + 1;
				const float x0 = xd[t0], x1 = xd[t1];
				const float b0 = (float)(bs[t0 * 16 + 2 * s] + bs[t0 * 16 + 2 * s + 1]);
				const float b1 = (float)(bs[t1 * 16 + 2 * s] + bs[t1 * 16 + 2 * s + 1]);
				mma_scale_add(acc[nt], s0, s1, x0, x1, c);
				mma_token_add(accm[nt], m0, m1, x0, x1, b0, b1);
			});
		}
	}
	mma_store(dst, ldd, rows, n, row0 + 16 * warp + g, tok0 + 2 * q4, acc, accm);
}

// ---- Q6_K (the device layout of matvec.cu) --------------------------------------

extern "C" __global__ void __launch_bounds__(128)
q6k_mma(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	MMA_START;
	__shared__ float dsc[MMA_BM][16], xd[MMA_BN];
	MMA_BLOCK;
	float acc[8][4] = {}, acco[8][4] = {};
	for (int b = 0; b < nb; b++) {
		__syncthreads();
		// Weights unsigned 0…63: the +32 offset is taken off through the activations' sums.
		mma_load_q6k(aq, w, rows, nb, row0, b, false);
		MMA_EACH_ROW(for (int s = 0; s < 16; s++) dsc[r][s] = 0.f) {
			const u8* plane = w + (size_t)row * q6k_row_bytes(nb);
			const float d = h2f(ld2(plane + (size_t)208 * nb + 2 * b));
			const i8* sc = (const i8*)(plane + (size_t)192 * nb + 16 * b);
			for (int s = 0; s < 16; s++) dsc[r][s] = d * (float)sc[s];
		}
		MMA_X_TILE(b);
#pragma unroll 1
		for (int s = 0; s < 16; s++) {
			MMA_A_K16(s);
			const float s0 = dsc[r0][s], s1 = dsc[r1][s];
			MMA_TILES_K16({
				const int t0 = 8 * nt + 2 * q4, t1 = t0 + 1;
				const float x0 = xd[t0], x1 = xd[t1];
				const float o0 = (float)(32 * bs[t0 * 16 + s]), o1 = (float)(32 * bs[t1 * 16 + s]);
				mma_scale_add(acc[nt], s0, s1, x0, x1, c);
				mma_token_add(acco[nt], s0, s1, x0, x1, o0, o1);
			});
		}
	}
	mma_store(dst, ldd, rows, n, row0 + 16 * warp + g, tok0 + 2 * q4, acc, acco);
}

// ---- integer epilogues (cuda-mma-int) -------------------------------------------
//
// The same tiles, but each sub-block's product is scaled by its 6-bit (Q4_K)
// or int8 (Q6_K) scale in int32 (ggml's sumi = Σ sc·dot), and floats enter
// once per super-block: d·dx·Σ sc·dot, less dmin·dx·Σ m·bsum for Q4_K. A
// tile product then costs four integer multiply-adds instead of eight
// float ones and their conversions. Q6_K's quants are unpacked signed
// (q − 32), so its offset needs no activation sums. Every sum is exact
// (at most 63·15·127·256 < 2³¹ for Q4_K, 128·32·127·256 for Q6_K).

// MMA_INT_SUMS(K, NS, sc) declares isum, the warp's integer products of the
// super-block's NS sub-blocks of K values, each scaled by its rows' int
// scales sc[r0][s] and sc[r1][s] (ggml's Σ sc·dot), two sub-blocks a pass.
#define MMA_INT_SUMS(K, NS, sc)                            \
	int isum[8][4] = {};                                   \
	_Pragma("unroll 2") for (int s = 0; s < NS; s++) {     \
		MMA_A_K##K(s);                                     \
		const int s0 = sc[r0][s], s1 = sc[r1][s];          \
		MMA_TILES_K##K(mma_int_add(isum[nt], s0, s1, c);); \
	}

// mma_store1 writes a warp's accumulators (mma_store without the second term).
__device__ __forceinline__ void mma_store1(float* dst, int ldd, int rows, int n, int r0, int t0, const float acc[8][4]) {
	const int r1 = r0 + 8;
#pragma unroll
	for (int nt = 0; nt < 8; nt++) {
		const int ta = t0 + 8 * nt, tb = ta + 1;
		if (r0 < rows && ta < n) dst[(size_t)ta * ldd + r0] = acc[nt][0];
		if (r0 < rows && tb < n) dst[(size_t)tb * ldd + r0] = acc[nt][1];
		if (r1 < rows && ta < n) dst[(size_t)ta * ldd + r1] = acc[nt][2];
		if (r1 < rows && tb < n) dst[(size_t)tb * ldd + r1] = acc[nt][3];
	}
}

extern "C" __global__ void __launch_bounds__(128)
q4k_mmai(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	MMA_START;
	__shared__ float wd[MMA_BM], wm[MMA_BM], xd[MMA_BN];
	__shared__ u8 sc6[MMA_BM][8], mn6[MMA_BM][8];
	MMA_BLOCK;
	float acc[8][4] = {}, accm[8][4] = {};
	for (int b = 0; b < nb; b++) {
		__syncthreads(); // the previous super-block's tiles are read
		mma_load_q4k(aq, w, rows, nb, row0, b);
		MMA_EACH_ROW(wd[r] = wm[r] = 0.f; for (int s = 0; s < 8; s++) sc6[r][s] = mn6[r][s] = 0) {
			const u8* blk = w + ((size_t)row * nb + b) * 144;
			wd[r] = h2f(ld2(blk));
			wm[r] = h2f(ld2(blk + 2));
			u8 sc[12];
			for (int i = 0; i < 12; i++) sc[i] = blk[4 + i];
			for (int s = 0; s < 8; s++) {
				int c, m;
				q4k_sub_scale(sc, s, c, m);
				sc6[r][s] = c;
				mn6[r][s] = m;
			}
		}
		MMA_X_TILE(b);
		MMA_INT_SUMS(32, 8, sc6);
		// Per super-block: scale terms d·dx·Σ sc·dot, min terms dmin·dx·Σ m·bsum.
		const float d0 = wd[r0], d1 = wd[r1], m0 = wm[r0], m1 = wm[r1];
#pragma unroll
		for (int nt = 0; nt < 8; nt++) {
			const int t0 = 8 * nt + 2 * q4, t1 = t0 + 1;
			int mi[4] = {0, 0, 0, 0};
#pragma unroll
			for (int s = 0; s < 8; s++) {
				const int b0 = bs[t0 * 16 + 2 * s] + bs[t0 * 16 + 2 * s + 1];
				const int b1 = bs[t1 * 16 + 2 * s] + bs[t1 * 16 + 2 * s + 1];
				const int n0 = mn6[r0][s], n1 = mn6[r1][s];
				mi[0] += n0 * b0;
				mi[1] += n0 * b1;
				mi[2] += n1 * b0;
				mi[3] += n1 * b1;
			}
			const float x0 = xd[t0], x1 = xd[t1];
			mma_scale_add(acc[nt], d0, d1, x0, x1, isum[nt]);
			mma_scale_add(accm[nt], m0, m1, x0, x1, mi);
		}
	}
	mma_store(dst, ldd, rows, n, row0 + 16 * warp + g, tok0 + 2 * q4, acc, accm);
}

extern "C" __global__ void __launch_bounds__(128)
q6k_mmai(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	MMA_START;
	__shared__ float wd[MMA_BM], xd[MMA_BN];
	__shared__ i8 sc8[MMA_BM][16];
	MMA_BLOCK;
	float acc[8][4] = {};
	for (int b = 0; b < nb; b++) {
		__syncthreads();
		mma_load_q6k(aq, w, rows, nb, row0, b, true); // signed q − 32
		MMA_EACH_ROW(wd[r] = 0.f; for (int s = 0; s < 16; s++) sc8[r][s] = 0) {
			const u8* plane = w + (size_t)row * q6k_row_bytes(nb);
			wd[r] = h2f(ld2(plane + (size_t)208 * nb + 2 * b));
			const i8* sc = (const i8*)(plane + (size_t)192 * nb + 16 * b);
			for (int s = 0; s < 16; s++) sc8[r][s] = sc[s];
		}
		MMA_X_TILE(b);
		MMA_INT_SUMS(16, 16, sc8);
		const float d0 = wd[r0], d1 = wd[r1];
#pragma unroll
		for (int nt = 0; nt < 8; nt++) {
			const int t0 = 8 * nt + 2 * q4, t1 = t0 + 1;
			const float x0 = xd[t0], x1 = xd[t1];
			mma_scale_add(acc[nt], d0, d1, x0, x1, isum[nt]);
		}
	}
	mma_store1(dst, ldd, rows, n, row0 + 16 * warp + g, tok0 + 2 * q4, acc);
}
