// mma_pipe.cu: cuda-mma-pipe, the prefill products of cuda-mma-int (mma.cu)
// with the tiles streamed into shared memory by cp.async, several super-
// blocks ahead of the tensor cores, and larger blocks.
//
// A block is 128 weight rows × BN tokens (BN = 32·NWN; the one instance is
// NWN = 2: 64 tokens, 8 warps), its warps laid out 4 along the rows × NWN
// along the tokens; each warp holds 32 rows × 32 tokens (2 m16 tiles × 4
// n8 tiles). Per super-block of 256 values the block's raw weight blocks
// (Q4_K: the 144-byte block as it is; Q6_K: its quants, scales and the 16
// bytes holding its d) and the tokens' whole 292-byte Q8_K blocks are
// copied into one of NST stages of dynamic shared memory with cp.async
// (16-byte copies for the weights; the Q8_K blocks are only 4-byte
// aligned, so 4-byte copies, four threads a token), NST - 1 super-blocks
// ahead of the one being multiplied. Fragments come from shared memory by
// ldmatrix (row slots of an odd number of 16-byte units: no bank
// conflicts); the 4- and 6-bit quants are unpacked to int8 in registers
// (each A fragment serves 4 n8 tiles).
//
// The arithmetic is cuda-mma-int's, operation for operation, so the outputs
// are bit-identical to it: per super-block each sub-block's integer product
// is scaled by its 6-bit (Q4_K) or int8 (Q6_K) scale in int32, then
// acc += d·dx·(float)Σ sc·dot and, for Q4_K, accm += dmin·dx·(float)Σ m·bsum
// in the same float operations and order; dst = acc − accm. The Q4_K min
// sums Σ_s m_s·(bsum_2s + bsum_2s+1) are exact integers taken on the tensor
// cores here (two m16n8k16 products: A the 8 mins each twice, B the token's
// 16 bsums split as 64·hi + lo, both int8 since |bsum| ≤ 16·128), where
// cuda-mma-int sums them with scalar multiply-adds: the same integers.
//
// dst[j*ldd + r] = W[r]·X[j] for r < rows, j < n; launch with grid
// (ceil(rows/128), ceil(n/BN)), 128·NWN threads and PipeTile.Shared bytes
// of dynamic shared memory (mma_pipe.go).

#define MP_BM 128  // weight rows a block
#define MP_WN 4    // n8 tiles a warp (32 tokens)
#define MP_XS 304  // a token's row in shared memory: [12 pad][d][256 qs][16 bsums], 19 16-byte units (odd: ldmatrix without bank conflicts)
#define MP_XD 12   // offset of d in it
#define MP_XQ 16   // of the quants
#define MP_XB 272  // of the bsums
#define MP_Q4S 144 // a Q4_K row: its block as it is (9 units)
#define MP_Q6S 240 // a Q6_K row: 192 quant bytes, 16 scales, the 16 bytes holding d, 16 pad (15 units)

__device__ __forceinline__ u32 mp_smem(const void* p) {
	u32 a;
	asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
	return a;
}

// cp.async copies; with ok false nothing is read and the bytes are zeroed.
__device__ __forceinline__ void mp_cp16(u32 dst, const void* src, bool ok) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void mp_cp4(u32 dst, const void* src, bool ok) {
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
__device__ __forceinline__ void mp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void mp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ void mp_ldsm4(u32 r[4], u32 addr) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
	             : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	             : "r"(addr));
}
__device__ __forceinline__ void mp_ldsm2(u32 r[2], u32 addr) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

__device__ __forceinline__ void mp_mma32(int c[4], const u32 a[4], u32 b0, u32 b1) {
	asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
	             : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
	             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mp_mma16(int c[4], u32 a0, u32 a1, u32 b) {
	asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
	             : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
	             : "r"(a0), "r"(a1), "r"(b));
}

// mp_load_x copies the Q8_K blocks of super-block b of the block's BN
// tokens into the stage at sb (zeros past n): four threads a token, the
// first nw of its 73 words (65 without the bsums), thread q words q, q+4, ….
template <int NT>
__device__ __forceinline__ void mp_load_x(u32 sb, const u8* x, int n, int nb, int tok0, int b, int nw) {
	const int t = threadIdx.x >> 2, q = threadIdx.x & 3, tok = tok0 + t;
	const bool ok = tok < n;
	const u8* src = x + ((size_t)(ok ? tok : 0) * nb + b) * 292 + 4 * q;
	const u32 d = sb + t * MP_XS + MP_XD + 4 * q;
#pragma unroll
	for (int j = 0; j < 19; j++)
		if (q + 4 * j < nw) mp_cp4(d + 16 * j, src + 16 * j, ok);
}

// mp_store writes a thread's accumulators (less off, where given): rows
// r0 + 16mt (+8), tokens t0 + 8nt (+1), the C fragments' places.
__device__ __forceinline__ void mp_store(float* dst, int ldd, int rows, int n, int r0, int t0, const float acc[2][MP_WN][4],
                                         const float (*off)[MP_WN][4]) {
#pragma unroll
	for (int mt = 0; mt < 2; mt++) {
		const int ra = r0 + 16 * mt, rb = ra + 8;
#pragma unroll
		for (int nt = 0; nt < MP_WN; nt++) {
			const int ta = t0 + 8 * nt, tb = ta + 1;
			float v[4];
#pragma unroll
			for (int i = 0; i < 4; i++) v[i] = off ? acc[mt][nt][i] - off[mt][nt][i] : acc[mt][nt][i];
			if (ra < rows && ta < n) dst[(size_t)ta * ldd + ra] = v[0];
			if (ra < rows && tb < n) dst[(size_t)tb * ldd + ra] = v[1];
			if (rb < rows && ta < n) dst[(size_t)ta * ldd + rb] = v[2];
			if (rb < rows && tb < n) dst[(size_t)tb * ldd + rb] = v[3];
		}
	}
}

// MP_START waits for the kernel before (PDL_START), then starts the
// pipeline (load(st, b) copies super-block b into stage st): the first
// NST - 1 super-blocks' copies, each stage its own commit group.
#define MP_START                                          \
	PDL_START();                                          \
	_Pragma("unroll") for (int s = 0; s < NST - 1; s++) { \
		if (s < nb) load(s, s);                           \
		mp_commit();                                      \
	}

// MP_STAGE(b) begins super-block b's step: once every thread's copies of
// it are in, the stage freed by b - 1 takes super-block b + NST - 1; A and
// B are b's weight and token rows, sa and sb their shared addresses.
#define MP_STAGE(b)                                                             \
	mp_wait<NST - 2>(); /* this thread's copies of super-block b are in */      \
	__syncthreads();    /* … and everyone's; stage (b-1) % NST is free again */ \
	if (b + NST - 1 < nb) load((b + NST - 1) % NST, b + NST - 1);               \
	mp_commit();                                                                \
	const int st = b % NST;                                                     \
	const u8* A = mp_sm + st * STAGE;                                           \
	const u8* B = A + AS;                                                       \
	const u32 sa = s0 + st * STAGE, sb = sa + AS

// MP_OWN_ROWS runs the statement after it for each of the thread's four
// weight rows of its warp's C fragments, [mt][h]: row wr + 16mt + g + 8h.
#define MP_OWN_ROWS _Pragma("unroll") for (int mt = 0; mt < 2; mt++) _Pragma("unroll") for (int h = 0; h < 2; h++)

// MP_EACH runs stmt for every place [mt][nt][i] of a thread's C fragments
// (2 m16 tiles × MP_WN n8 tiles × 4), unrolled.
#define MP_EACH(stmt)                                    \
	_Pragma("unroll") for (int mt = 0; mt < 2; mt++)     \
	_Pragma("unroll") for (int nt = 0; nt < MP_WN; nt++) \
	_Pragma("unroll") for (int i = 0; i < 4; i++) stmt

// MP_BLOCK(RS) opens q4k_pipe and q6k_pipe (template parameters NWN, NST):
// the block's warps (NWARP), threads (NT) and tokens (BN); a stage of
// dynamic shared memory is AS bytes of weight rows of RS bytes, then BN
// tokens' rows. The thread's place in its warp (g, q4) and its warp's in
// the block (wm along the rows, wn along the tokens); s0, the stages'
// shared address. For the copies in, TPR threads take a weight row: the
// thread's is lr (lok: it is below rows), its 16-byte units lq, lq+TPR, ….
#define MP_BLOCK(RS)                                                                             \
	constexpr int NWARP = 4 * NWN, NT = 32 * NWARP, BN = 8 * MP_WN * NWN;                        \
	constexpr int AS = MP_BM * (RS), STAGE = AS + BN * MP_XS;                                    \
	extern __shared__ __align__(16) u8 mp_sm[];                                                  \
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, q4 = lane & 3; \
	const int wm = warp & 3, wn = warp >> 2;                                                     \
	const int row0 = blockIdx.x * MP_BM, tok0 = blockIdx.y * BN, nb = k / QK_K;                  \
	const u32 s0 = mp_smem(mp_sm);                                                               \
	constexpr int TPR = NT / MP_BM;                                                              \
	static_assert(BN == NT / 4, "mp_load_x takes four threads a token");                         \
	const int lr = tid / TPR, lq = tid % TPR;                                                    \
	const bool lok = row0 + lr < rows

// ---- Q4_K ---------------------------------------------------------------------

template <int NWN, int NST, int UNR = 2>
__device__ __forceinline__ void q4k_pipe(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	MP_BLOCK(MP_Q4S);
	// A row in shared memory: the block as it is, 9 units.
	const u8* lw = w + (size_t)(lok ? row0 + lr : 0) * nb * 144 + 16 * lq;
	auto load = [&](int st, int b) {
		const u32 sa = s0 + st * STAGE, da = sa + lr * MP_Q4S + 16 * lq;
		const u8* src = lw + (size_t)b * 144;
#pragma unroll
		for (int j = 0; j < (9 + TPR - 1) / TPR; j++)
			if (lq + TPR * j < 9) mp_cp16(da + 16 * TPR * j, src + 16 * TPR * j, lok);
		mp_load_x<NT>(sa + AS, x, n, nb, tok0, b, 73);
	};

	float acc[2][MP_WN][4], accm[2][MP_WN][4];
	MP_EACH(acc[mt][nt][i] = accm[mt][nt][i] = 0.f);

	MP_START;
	const int wr = 32 * wm, wt = 8 * MP_WN * wn; // the warp's first row and token in the block
#pragma unroll 1
	for (int b = 0; b < nb; b++) {
		MP_STAGE(b);

		// The 6-bit scales of the thread's four rows (ggml's get_scale_min_k4,
		// four at a time): [mt][h] rows wr + 16mt + g + 8h, sub-blocks 0-3, 4-7.
		u32 scl[2][2], sch[2][2];
		MP_OWN_ROWS {
			const u8* ar = A + (wr + 16 * mt + g + 8 * h) * MP_Q4S;
			const u32 w0 = *(const u32*)(ar + 4), w2 = *(const u32*)(ar + 12);
			scl[mt][h] = w0 & 0x3f3f3f3f;
			sch[mt][h] = (w2 & 0x0f0f0f0f) | ((w0 >> 2) & 0x30303030);
		}
		int isum[2][MP_WN][4];
		MP_EACH(isum[mt][nt][i] = 0);
#pragma unroll UNR
		for (int s = 0; s < 8; s++) {
			// A: sub-block s is the low (s even) or high nibbles of quant
			// bytes 32(s/2)…+31, the row's 16-byte units 1 + 2(s/2) and the next.
			u32 a[2][4];
			int sc[2][2];
#pragma unroll
			for (int mt = 0; mt < 2; mt++) {
				u32 raw[4];
				mp_ldsm4(raw, sa + (wr + 16 * mt + (lane & 15)) * MP_Q4S + 16 * (1 + 2 * (s >> 1) + (lane >> 4)));
#pragma unroll
				for (int i = 0; i < 4; i++) a[mt][i] = (raw[i] >> (4 * (s & 1))) & 0x0f0f0f0f;
#pragma unroll
				for (int h = 0; h < 2; h++) sc[mt][h] = ((s < 4 ? scl[mt][h] : sch[mt][h]) >> (8 * (s & 3))) & 0xff;
			}
#pragma unroll
			for (int nt = 0; nt < MP_WN; nt++) {
				u32 bb[2]; // quants 32s…32s+31 of tokens wt + 8nt…+7
				mp_ldsm2(bb, sb + (wt + 8 * nt + (lane & 7)) * MP_XS + MP_XQ + 16 * (2 * s + ((lane >> 3) & 1)));
#pragma unroll
				for (int mt = 0; mt < 2; mt++) {
					int c[4] = {0, 0, 0, 0};
					mp_mma32(c, a[mt], bb[0], bb[1]);
					mma_int_add(isum[mt][nt], sc[mt][0], sc[mt][1], c);
				}
			}
		}
		// Per super-block: scale terms d·dx·Σ sc·dot, min terms dmin·dx·Σ m·bsum.
		// The mins as m16n8k16 A fragments: thread q4 holds k = 4q4…4q4+3, i.e.
		// mins 2q4 and 2q4+1 each twice.
		u32 am[2][2];
		float d[2][2], dm[2][2];
		MP_OWN_ROWS {
			const u8* ar = A + (wr + 16 * mt + g + 8 * h) * MP_Q4S;
			const u32 dd = *(const u32*)ar, w1 = *(const u32*)(ar + 8), w2 = *(const u32*)(ar + 12);
			d[mt][h] = h2f(dd & 0xffff);
			dm[mt][h] = h2f(dd >> 16);
			const u32 mw = q4 < 2 ? (w1 & 0x3f3f3f3f) : (((w2 >> 4) & 0x0f0f0f0f) | ((w1 >> 2) & 0x30303030));
			const u32 b0 = 2 * (q4 & 1);
			am[mt][h] = __byte_perm(mw, 0, b0 | (b0 << 4) | ((b0 + 1) << 8) | ((b0 + 1) << 12));
		}
#pragma unroll
		for (int nt = 0; nt < MP_WN; nt++) {
			const int t0 = wt + 8 * nt + 2 * q4, t1 = t0 + 1;
			const float x0 = *(const float*)(B + t0 * MP_XS + MP_XD), x1 = *(const float*)(B + t1 * MP_XS + MP_XD);
			// B: bsums 4q4…4q4+3 of token wt + 8nt + g as 64·hi + lo.
			const uint2 v = *(const uint2*)(B + (wt + 8 * nt + g) * MP_XS + MP_XB + 8 * q4);
			const u32 bhi = __byte_perm(v.x >> 6, v.y >> 6, 0x6420);
			const u32 blo = __byte_perm(v.x & 0x003f003f, v.y & 0x003f003f, 0x6420);
#pragma unroll
			for (int mt = 0; mt < 2; mt++) {
				int mi[4] = {0, 0, 0, 0};
				mp_mma16(mi, am[mt][0], am[mt][1], bhi);
#pragma unroll
				for (int i = 0; i < 4; i++) mi[i] *= 64;
				mp_mma16(mi, am[mt][0], am[mt][1], blo);
				const float d0 = d[mt][0], d1 = d[mt][1], m0 = dm[mt][0], m1 = dm[mt][1];
				mma_scale_add(acc[mt][nt], d0, d1, x0, x1, isum[mt][nt]);
				mma_scale_add(accm[mt][nt], m0, m1, x0, x1, mi);
			}
		}
	}
	mp_wait<0>();
	mp_store(dst, ldd, rows, n, row0 + wr + g, tok0 + wt + 2 * q4, acc, accm);
}

// ---- Q6_K (the device layout of matvec.cu) --------------------------------------

template <int NWN, int NST>
__device__ __forceinline__ void q6k_pipe(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	MP_BLOCK(MP_Q6S);
	// A row in shared memory: units 0-11 the block's ql and qh, 12 its 16
	// scales, 13 the 16-byte unit of the d plane that holds its d.
	const u8* plane = w + (size_t)(lok ? row0 + lr : 0) * q6k_row_bytes(nb);
	auto load = [&](int st, int b) {
		const u32 da = s0 + st * STAGE + lr * MP_Q6S;
#pragma unroll
		for (int j = 0; j < (14 + TPR - 1) / TPR; j++) {
			const int c = lq + TPR * j;
			if (c < 12) mp_cp16(da + 16 * c, plane + (size_t)192 * b + 16 * c, lok);
			else if (c == 12) mp_cp16(da + 16 * c, plane + (size_t)192 * nb + 16 * b, lok);
			else if (c == 13) mp_cp16(da + 16 * c, plane + (size_t)208 * nb + ((2 * b) & ~15), lok);
		}
		mp_load_x<NT>(s0 + st * STAGE + AS, x, n, nb, tok0, b, 65);
	};

	float acc[2][MP_WN][4];
	MP_EACH(acc[mt][nt][i] = 0.f);

	MP_START;
	const int wr = 32 * wm, wt = 8 * MP_WN * wn;
#pragma unroll 1
	for (int b = 0; b < nb; b++) {
		MP_STAGE(b);

		int isum[2][MP_WN][4];
		MP_EACH(isum[mt][nt][i] = 0);
		// Values 128hn + 32c + l (l < 32) are ql[64hn + 32(c&1) + l]'s low
		// (c < 2) or high nibble and bits 2c, 2c+1 of qh[32hn + l], stored
		// +32; the sub-blocks of 16 of one hn and l-half jj are s = 8hn + 2c + jj.
#pragma unroll 1
		for (int hn = 0; hn < 2; hn++)
#pragma unroll 1
			for (int jj = 0; jj < 2; jj++) {
				u32 a[2][4][2]; // [mt][c][row g, g+8]
				int sc[2][4][2];
#pragma unroll
				for (int mt = 0; mt < 2; mt++) {
					const int rl = wr + 16 * mt + (lane & 15);
					u32 qh[2], ql[4];
					mp_ldsm2(qh, sa + rl * MP_Q6S + 128 + 32 * hn + 16 * jj);
					mp_ldsm4(ql, sa + rl * MP_Q6S + 64 * hn + 16 * jj + 32 * (lane >> 4));
#pragma unroll
					for (int c = 0; c < 4; c++)
#pragma unroll
						for (int h = 0; h < 2; h++) {
							const u32 v = ((ql[2 * (c & 1) + h] >> (4 * (c >> 1))) & 0x0f0f0f0f) | (((qh[h] >> (2 * c)) & 0x03030303) << 4);
							a[mt][c][h] = ((v | 0x80808080) - 0x20202020) ^ 0x80808080; // bytewise q − 32
						}
#pragma unroll
					for (int h = 0; h < 2; h++) {
						const uint2 sw = *(const uint2*)(A + (wr + 16 * mt + g + 8 * h) * MP_Q6S + 192 + 8 * hn);
#pragma unroll
						for (int c = 0; c < 4; c++)
							sc[mt][c][h] = (int)(i8)(((c < 2 ? sw.x : sw.y) >> (8 * (2 * (c & 1) + jj))) & 0xff);
					}
				}
#pragma unroll
				for (int nt = 0; nt < MP_WN; nt++) {
					u32 bb[4]; // quants of sub-blocks 8hn + 2c + jj, c = 0…3
					mp_ldsm4(bb, sb + (wt + 8 * nt + (lane & 7)) * MP_XS + MP_XQ + 16 * (8 * hn + jj + 2 * (lane >> 3)));
#pragma unroll
					for (int mt = 0; mt < 2; mt++)
#pragma unroll
						for (int c = 0; c < 4; c++) {
							int cc[4] = {0, 0, 0, 0};
							mp_mma16(cc, a[mt][c][0], a[mt][c][1], bb[c]);
							mma_int_add(isum[mt][nt], sc[mt][c][0], sc[mt][c][1], cc);
						}
				}
			}
		float d[2][2];
		MP_OWN_ROWS d[mt][h] = h2f(*(const u16*)(A + (wr + 16 * mt + g + 8 * h) * MP_Q6S + 208 + ((2 * b) & 15)));
#pragma unroll
		for (int nt = 0; nt < MP_WN; nt++) {
			const int t0 = wt + 8 * nt + 2 * q4, t1 = t0 + 1;
			const float x0 = *(const float*)(B + t0 * MP_XS + MP_XD), x1 = *(const float*)(B + t1 * MP_XS + MP_XD);
#pragma unroll
			for (int mt = 0; mt < 2; mt++) {
				const float d0 = d[mt][0], d1 = d[mt][1];
				mma_scale_add(acc[mt][nt], d0, d1, x0, x1, isum[mt][nt]);
			}
		}
	}
	mp_wait<0>();
	mp_store(dst, ldd, rows, n, row0 + wr + g, tok0 + wt + 2 * q4, acc, nullptr);
}

// The instances (mma_pipe.go's PipeTiles gives each its threads, tokens a
// block and shared bytes): 128 × 64 with 8 warps, 3 stages: Q4_K 111 KiB,
// Q6_K 147 KiB of shared memory, so one block an SM. (A 128 × 128 instance
// with 16 warps, q4k_pipe<4, 3>, needs at most 128 registers a thread and
// spills at that with NVRTC 11.8: 120 bytes for Q4_K, 60 for Q6_K.)

extern "C" __global__ void __launch_bounds__(256, 1)
q4k_mmap(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	q4k_pipe<2, 3>(dst, ldd, w, rows, x, n, k);
}
extern "C" __global__ void __launch_bounds__(256, 1)
q6k_mmap(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	q6k_pipe<2, 3>(dst, ldd, w, rows, x, n, k);
}

// cuda-mma-pipe2: the same tiles, two blocks an SM (128 registers a thread);
// Q6_K with two stages (2 × 100 KiB of shared memory).
extern "C" __global__ void __launch_bounds__(256, 2)
q4k_mmap2(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	q4k_pipe<2, 3, 1>(dst, ldd, w, rows, x, n, k);
}
extern "C" __global__ void __launch_bounds__(256, 2)
q6k_mmap2(float* dst, int ldd, const u8* w, int rows, const u8* x, int n, int k) {
	q6k_pipe<2, 2>(dst, ldd, w, rows, x, n, k);
}
