// persistent.cu: the persistent decode kernel (DAMASCUS_CUDA_DECODE=persistent
// in model/llama) and its matvec alone (pmv, the ledger's cuda-persist).
//
// One launch runs layers [l0, l1) of a single token's decode step. Its
// blocks (one per SM, PT threads, all co-resident: the host sizes the grid
// from the occupancy API) walk each layer's steps in order and meet at grid
// barriers between the dependent ones:
//
//   A  every block: x → rmsnorm(attn_norm) → Q8_K/Q8_0 in its own shared
//      memory; then Q/K/V rows two a warp over the whole grid, the rope
//      applied to each rotated pair of rows and the keys and values stored
//      at the position in the cache, the queries rotated into q
//   —  barrier
//   B  flash-decoding: 32 splits per KV head (DecodeSplits), a 128-thread
//      quarter of a block per split, partials into po/pml
//   —  barrier
//   C  combine: a quarter block per activation block of the attention
//      output (two heads of 128 for Q8_K), quantized into xqa
//   —  barrier
//   D  every block copies xqa to shared memory; O rows two a warp, each
//      added into the residual x
//   —  barrier
//   E  every block: x → rmsnorm(ffn_norm) → quantized in shared memory;
//      gate and up row r by one warp, h[r] = silu(gate)·up
//   —  barrier
//   F  every block quantizes h into its shared memory; down rows two a
//      warp, added into x
//   —  barrier (between layers; the launch's end after the last)
//
// The arithmetic is the launch-per-op path's, operation for operation, so
// that both give the same bits: the matvec lanes accumulate exactly as
// matvec.cu's <type>_rows<1, U> (U only changes how many loads are in
// flight, not the order of the sums), the rmsnorm sums its squares in the
// order of engine.cu's add_rmsnorm launched with blockFor(dim) threads (the
// "virtual block" vb), the quantizers are quantize.cu's, the rope, silu,
// attention split and combine are engine.cu's expressions. Residual adds
// are __fadd_rn(x, product) as add_rmsnorm's. TestPersistentDecodeAgrees
// (model/llama) holds the two paths to each other on the device.
//
// Memory model: what one block writes and another reads in a later step
// (x, q, h, po, pml, xqa, the cache's new position) is read with
// ld.global.cg (__ldcg), never through the non-coherent path; the barrier
// is cooperative groups' own (sm_70+ form): each block's thread 0 adds to
// one counter with atom.add.release.gpu (block 0 adds 0x80000000 − (n−1),
// the others 1, so a whole barrier adds 0x80000000 and flips the top bit;
// self-resetting across barriers and launches) and polls it with
// ld.acquire.gpu until the top bit flips; __syncthreads on both sides.
// Weights and norm weights are read-only for the launch (ld.global.nc).
//
// Watchdog: a barrier that waits longer than timeout_ns (%globaltimer)
// sets *err and every barrier after that returns at once, so a grid that
// is not co-resident after all ends in about one timeout with garbage out
// and an error flag the host reads after the step, instead of hanging.

#ifndef PT
#define PT 256 // threads a block (persistent.go's persistThreads)
#endif
#ifndef PMINB
#define PMINB 1 // blocks a multiprocessor the registers are budgeted for (__launch_bounds__)
#endif
#define PW (PT / 32)    // warps a block
#define PG (PT / 128)   // 128-thread groups a block (attention)
#define PSPLITS 32      // attention splits per KV head: variants/cuda DecodeSplits
#ifndef PKU
#define PKU 8 // keys a warp loads at once in the attention's score pass (a divisor of 8)
#endif
#ifndef PMAXG
#define PMAXG 4 // query heads per KV head (engine.cu takes up to 8: fewer registers here)
#endif

// A layer as the host lays it out (variants/cuda persistent.go), every
// field 8 bytes.
struct PLayer {
	const u8* w[7];   // q, k, v, o, gate, up, down in their device layouts
	long long f[7];   // their formats: 0 Q4_K, 1 Q6_K, 2 Q8_0
	long long qt[4];  // activation codes (1 Q8_K, 2 Q8_0) read by q/k/v, o, gate/up, down
	const float* attn_norm;
	const float* ffn_norm;
	float* kc;        // the layer's cache: [KV head][position][headDim]
	float* vc;
};
#define PLAYER_WORDS 22

struct PDecode {
	float* x;        // the residual stream, dim floats
	float* q;        // rotated queries, nHeads·hd
	float* h;        // silu(gate)·up, ffn floats
	float* po;       // attention partials: PSPLITS·nHeads·hd
	float* pml;      // PSPLITS·nHeads·2
	u8* xqa;         // the attention output quantized for O
	const int* posp; // the token's position
	const float* cosT;
	const float* sinT;
	u32* bar;        // the grid barrier's counter
	u32* err;        // the watchdog's flag: 0, or 1 + the barrier that timed out
	const PLayer* layers;
	long long dim, nHeads, nKV, hd, nctx, ffn;
	long long vb;      // blockFor(dim): add_rmsnorm's block size, whose sum order the norm keeps
	long long flags;   // 1: prefetch the next step's weight rows into L2 before each barrier; 2: rope NeoX; 4: the watchdog's test; 8: phase timing
	long long timeout_ns;
	float eps, scale;
	u64* times; // flags & 8: block 0's %globaltimer at each step's end, PMARKS a layer (the phase timing)
};
#define PDECODE_WORDS 23
#define PMARKS 16

// ---- the grid barrier --------------------------------------------------------

__device__ __forceinline__ u32 ld_acquire_gpu(const u32* p) {
	u32 v;
	asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
__device__ __forceinline__ u32 ld_relaxed_gpu(const u32* p) {
	u32 v;
	asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
__device__ __forceinline__ u32 atom_add_release_gpu(u32* p, u32 v) {
	u32 old;
	asm volatile("atom.add.release.gpu.global.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
}
__device__ __forceinline__ u64 global_ns() {
	u64 t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// pmark records block 0's time at mark i of layer (flags & 8): where a
// step's time goes, read by the host after the launch.
__device__ __forceinline__ void pmark(const PDecode& P, int layer, int i) {
	if ((P.flags & 8) && blockIdx.x == 0 && threadIdx.x == 0) P.times[layer * PMARKS + i] = global_ns();
}

// grid_sync is barrier number id (for the error flag) of the launch.
__device__ __forceinline__ void grid_sync(const PDecode& P, int id) {
	__syncthreads();
	if (threadIdx.x == 0 && !((P.flags & 4) && id == 0 && blockIdx.x == 0)) { // flags & 4: block 0 skips barrier 0 (the watchdog's test)
		const u32 inc = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
		const u32 old = atom_add_release_gpu(P.bar, inc);
		u64 t0 = 0;
		int spins = 0;
		while (((old ^ ld_acquire_gpu(P.bar)) & 0x80000000u) == 0) {
			if (++spins < 256) continue;
			if (ld_relaxed_gpu(P.err) != 0) break; // another block's watchdog fired
			const u64 now = global_ns();
			if (t0 == 0) {
				t0 = now;
			} else if (now - t0 > (u64)P.timeout_ns) {
				atomicCAS(P.err, 0u, (u32)(1 + id));
				break;
			}
			asm volatile("nanosleep.u32 100;");
		}
	}
	__syncthreads();
}

// ---- L2 prefetch of weight rows (flags & 1) ------------------------------------

__device__ __forceinline__ void l2_prefetch(const u8* p, size_t n, int lane) {
	const size_t end = (size_t)p + n;
	for (size_t a = ((size_t)p & ~(size_t)127) + 128 * (size_t)lane; a < end; a += 32 * 128)
		asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
}

// Bytes of a row of k values in format f's device layout (matvec.go).
__device__ __forceinline__ size_t prow_bytes(int f, int k) {
	if (f == 0) return (size_t)(k / QK_K) * 144;
	if (f == 1) return q6k_row_bytes(k / QK_K);
	return q80_row_bytes(k / 32);
}

// ---- the matvec rows, two a warp, activations in shared memory -----------------
//
// Each is matvec.cu's <type>_rows<1, U> for two rows at once (the same
// lane mapping, the same expressions, the same order of the sums), the
// activations read from shared memory instead of through __ldg. ra and rb
// come back in every lane.

__device__ __forceinline__ u32 sh4(const u8* p) { return *(const u32*)p; }
__device__ __forceinline__ u16 sh2(const u8* p) { return *(const u16*)p; }

// Weight loads: through the non-coherent path from global memory (SH
// false), or from shared memory (SH true: mega.cu's ring). The same bytes
// either way, so the sums are the same.
template <bool SH> __device__ __forceinline__ uint4 wld16(const u8* p) { return SH ? *(const uint4*)p : ld16(p); }
template <bool SH> __device__ __forceinline__ u16 wld2(const u8* p) { return SH ? *(const u16*)p : ld2(p); }

// PDOT_LOADS(N, U) runs the statement after it for each load a warp issues
// before it multiplies: its blocks b = b0 + N·u of U steps (those below
// nb), each of its NR rows r.
#define PDOT_LOADS(N, U)                                                                \
	_Pragma("unroll") for (int u = 0; u < U; u++) if (const int b = b0 + N * u; b < nb) \
		_Pragma("unroll") for (int r = 0; r < NR; r++)

#ifndef PU_Q4K
#define PU_Q4K 2
#endif
#ifndef PU_Q6K
#define PU_Q6K 1
#endif
#define PU_Q80 2
// PU_* are the steps of a row's loads in flight, two rows a warp. Register
// budget (ptxas, sm_90, NVRTC 11.8): with 256 threads and these, the whole
// kernel takes 255 registers and spills nothing; 512 threads (128
// registers) spilled 632 bytes whatever the matvec's unroll, as did
// PU_Q4K 3 or PU_Q6K 2 at 256. A lane has 2 rows × 2 steps × 32 bytes of
// Q4_K (2 × 64 of Q6_K) in flight: 32 KiB a multiprocessor of 8 warps.

template <bool SH, int NR>
__device__ __forceinline__ void pdot_q4k(const u8* __restrict__ wa, const u8* __restrict__ wb, const u8* xs, int nb,
                                         float& ra, float& rb) {
	const int lane = threadIdx.x & 31, t = lane & 7, p = t >> 1, h = t & 1;
	const u8* wr[2] = {wa, wb};
	constexpr int U = SH ? 1 : PU_Q4K; // shared memory needs no loads in flight (and mega.cu the registers)
	float acc[2] = {0.f, 0.f}, accm[2] = {0.f, 0.f};
	for (int b0 = lane >> 3; b0 < nb; b0 += 4 * U) {
		uint4 hdrs[NR][U], qs[NR][U];
		PDOT_LOADS(4, U) {
			hdrs[r][u] = wld16<SH>(wr[r] + (size_t)b * 144);
			qs[r][u] = wld16<SH>(wr[r] + (size_t)b * 144 + 16 + 32 * p + 16 * h);
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 4 * u;
			if (b >= nb) break;
			const u8* xb = xs + (size_t)b * 292;
			const u8* x0 = xb + 4 + 64 * p + 16 * h;
			const u8* x1 = x0 + 32;
			const float xd = __int_as_float(sh4(xb));
			const int bs0 = (i16)sh2(xb + 260 + 2 * (4 * p + h));
			const int bs1 = (i16)sh2(xb + 260 + 2 * (4 * p + 2 + h));
			const u32 xa0 = sh4(x0), xa1 = sh4(x0 + 4), xa2 = sh4(x0 + 8), xa3 = sh4(x0 + 12);
			const u32 xc0 = sh4(x1), xc1 = sh4(x1 + 4), xc2 = sh4(x1 + 8), xc3 = sh4(x1 + 12);
#pragma unroll
			for (int r = 0; r < NR; r++) {
				const uint4 hdr = hdrs[r][u], q = qs[r][u];
				const float d = h2f(hdr.x & 0xffff), dmin = h2f(hdr.x >> 16);
				int sc0, m0, sc1, m1;
				q4k_scale_min_pair(hdr, p, sc0, sc1, m0, m1);
				u32 lo[4], hi[4];
				q4k_nibbles(q, lo, hi);
				int s0 = dp4a_us(lo[0], xa0, 0);
				s0 = dp4a_us(lo[1], xa1, s0);
				s0 = dp4a_us(lo[2], xa2, s0);
				s0 = dp4a_us(lo[3], xa3, s0);
				int s1 = dp4a_us(hi[0], xc0, 0);
				s1 = dp4a_us(hi[1], xc1, s1);
				s1 = dp4a_us(hi[2], xc2, s1);
				s1 = dp4a_us(hi[3], xc3, s1);
				acc[r] += xd * d * (float)(sc0 * s0 + sc1 * s1);
				accm[r] += xd * dmin * (float)(m0 * bs0 + m1 * bs1);
			}
		}
	}
	ra = warp_sum(acc[0]) - warp_sum(accm[0]);
	rb = NR > 1 ? warp_sum(acc[1]) - warp_sum(accm[1]) : 0.f;
}

template <bool SH, int NR>
__device__ __forceinline__ void pdot_q6k(const u8* __restrict__ wa, const u8* __restrict__ wb, const u8* xs, int nb,
                                         float& ra, float& rb) {
	const int lane = threadIdx.x & 31, t = lane & 3, hn = t >> 1, e = t & 1, l0 = 16 * e;
	const u8* qpl[2] = {wa, wb};
	float acc[2] = {0.f, 0.f};
	for (int b0 = lane >> 2; b0 < nb; b0 += 8 * PU_Q6K) {
		uint4 As[NR][PU_Q6K], Bs[NR][PU_Q6K], Hs[NR][PU_Q6K], Ss[NR][PU_Q6K];
		u16 ds[NR][PU_Q6K];
		PDOT_LOADS(8, PU_Q6K) {
			const u8* qb = qpl[r] + (size_t)b * 192;
			As[r][u] = wld16<SH>(qb + 64 * hn + l0);
			Bs[r][u] = wld16<SH>(qb + 64 * hn + 32 + l0);
			Hs[r][u] = wld16<SH>(qb + 128 + 32 * hn + l0);
			Ss[r][u] = wld16<SH>(qpl[r] + (size_t)192 * nb + 16 * b);
			ds[r][u] = wld2<SH>(qpl[r] + (size_t)208 * nb + 2 * b);
		}
#pragma unroll
		for (int u = 0; u < PU_Q6K; u++) {
			const int b = b0 + 8 * u;
			if (b >= nb) break;
			const u8* xb = xs + (size_t)b * 292;
			const float xd = __int_as_float(sh4(xb));
#pragma unroll
			for (int r = 0; r < NR; r++) {
				const uint4 A = As[r][u], B = Bs[r][u], H = Hs[r][u], S = Ss[r][u];
				const float d = h2f(ds[r][u]);
				Q6K_LANE(A, B, H, S);
				Q6K_LANE_DOT(sum, sh4, sh2, xb);
				acc[r] += xd * d * (float)sum;
			}
		}
	}
	ra = warp_sum(acc[0]);
	rb = NR > 1 ? warp_sum(acc[1]) : 0.f;
}

template <bool SH, int NR>
__device__ __forceinline__ void pdot_q80(const u8* __restrict__ wa, const u8* __restrict__ wb, const u8* xs, int nb,
                                         float& ra, float& rb) {
	const int lane = threadIdx.x & 31;
	const u8* dpl[2] = {wa, wb};
	constexpr int U = SH ? 1 : PU_Q80;
	float acc[2] = {0.f, 0.f};
	for (int b0 = lane; b0 < nb; b0 += 32 * U) {
		uint4 qa[NR][U], qb[NR][U];
		u16 ds[NR][U];
		PDOT_LOADS(32, U) {
			const u8* qplane = dpl[r] + pad16(2 * nb);
			qa[r][u] = wld16<SH>(qplane + 32 * b);
			qb[r][u] = wld16<SH>(qplane + 32 * b + 16);
			ds[r][u] = wld2<SH>(dpl[r] + 2 * b);
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int b = b0 + 32 * u;
			if (b >= nb) break;
			int xq[8];
			const float xd = q80_act<true>(xs + (size_t)b * 34, xq);
#pragma unroll
			for (int r = 0; r < NR; r++) {
				const float d = h2f(ds[r][u]);
				const int wq[8] = {(int)qa[r][u].x, (int)qa[r][u].y, (int)qa[r][u].z, (int)qa[r][u].w,
				                   (int)qb[r][u].x, (int)qb[r][u].y, (int)qb[r][u].z, (int)qb[r][u].w};
				int s = 0;
#pragma unroll
				for (int i = 0; i < 8; i++) s = dp4a_ss(wq[i], xq[i], s);
				acc[r] += d * xd * (float)s;
			}
		}
	}
	ra = warp_sum(acc[0]);
	rb = NR > 1 ? warp_sum(acc[1]) : 0.f;
}

// Rows wa and wb (format f, k values) times the activations xs; NR 1:
// wa only (rb is 0). SH: the rows are in shared memory.
template <bool SH = false, int NR = 2>
__device__ __forceinline__ void pdot(int f, const u8* wa, const u8* wb, const u8* xs, int k, float& ra, float& rb) {
	switch (f) {
	case 0: pdot_q4k<SH, NR>(wa, wb, xs, k / QK_K, ra, rb); break;
	case 1: pdot_q6k<SH, NR>(wa, wb, xs, k / QK_K, ra, rb); break;
	default: pdot_q80<SH, NR>(wa, wb, xs, k / 32, ra, rb); break;
	}
}

#ifndef PNR
#define PNR 2 // rows a warp's loads cover at once in the steps: 1 takes a pair's rows one after the other (fewer registers, fewer loads in flight)
#endif

// Rows wa and wb of a step (format f): pdot's two rows at once, or (PNR
// 1) one after the other: each row's sums are the same either way.
__device__ __forceinline__ void pdot_pair(int f, const u8* wa, const u8* wb, const u8* xs, int k, float& ra, float& rb) {
#if PNR == 1
	float unused;
	pdot<false, 1>(f, wa, nullptr, xs, k, ra, unused);
	pdot<false, 1>(f, wb, nullptr, xs, k, rb, unused);
#else
	pdot<false, 2>(f, wa, wb, xs, k, ra, rb);
#endif
}

// ---- activations into shared memory -------------------------------------------

// Quantize n values of xs (shared) into xq (shared) as code qt, a warp a block.
__device__ __forceinline__ void pquantize(u8* xq, const float* xs, int n, int qt) {
	const int warp = threadIdx.x >> 5;
	if (qt == 1) {
		for (int b = warp; b < n / QK_K; b += PW) warp_q8_k(xq + (size_t)b * 292, xs + (size_t)b * QK_K);
	} else {
		for (int b = warp; b < n / 32; b += PW) warp_q8_0(xq + (size_t)b * 34, xs + (size_t)b * 32);
	}
}

// xs = rmsnorm(x)·w (dim values) and its quantization qt in xq, in this
// block's shared memory: add_rmsnorm's arithmetic, its sum of squares
// taken in the order its blockFor(dim) = vb threads take it.
__device__ void pnorm_quant(const PDecode& P, const float* x, const float* w, float* xs, u8* xq, int qt, double* red) {
	const int dim = (int)P.dim, vb = (int)P.vb;
	for (int i = threadIdx.x; i < dim; i += PT) xs[i] = __ldcg(x + i);
	__syncthreads();
	const double ss = sumsq_as_vb(xs, dim, vb, PT, red); // vb and PT are multiples of 32
	const float scale = 1.0f / sqrtf((float)(ss / dim) + P.eps);
	for (int i = threadIdx.x; i < dim; i += PT) xs[i] = __fmul_rn(__fmul_rn(xs[i], scale), w[i]);
	__syncthreads();
	pquantize(xq, xs, dim, qt);
	__syncthreads();
}

// Bytes of n activations quantized as qt.
__device__ __forceinline__ int pact_bytes(int n, int qt) { return qt == 1 ? n / QK_K * 292 : n / 32 * 34; }

// ---- attention: engine.cu's dattn on a 128-thread group -------------------------

__device__ __forceinline__ void group_sync(int g) { asm volatile("bar.sync %0, 128;" ::"r"(1 + g) : "memory"); }

struct PAttnShared {
	float p[PMAXG][32];
	float mrun[PMAXG], lrun[PMAXG], alpha[PMAXG];
};

// Split s of KV head kvh: dattn<D> with S = PSPLITS, the group's 128
// threads for the block's, group barriers for __syncthreads, coherent
// loads of q and the cache.
template <int D>
__device__ void pdattn(const PDecode& P, const float* kc, const float* vc, int pos, int s, int kvh, int g, PAttnShared& sh) {
	const int nHeads = (int)P.nHeads, nKV = (int)P.nKV, hd = (int)P.hd, nctx = (int)P.nctx;
	const float scale = P.scale;
	float* po = P.po;
	float* pml = P.pml;
	const float* q = P.q;
	const int G = nHeads / nKV, S = PSPLITS;
	const int ctx = pos + 1, per = (ctx + S - 1) / S, t0 = s * per, t1 = min(ctx, t0 + per);
	const int tid = threadIdx.x & 127, lane = tid & 31, warp = tid >> 5;
	const size_t pbase = (size_t)s * nHeads + (size_t)kvh * G;
	if (t0 >= t1) {
		for (int i = tid; i < G * hd; i += 128) po[pbase * hd + i] = 0.f;
		for (int gg = tid; gg < G; gg += 128) {
			pml[(pbase + gg) * 2] = NEG_INF;
			pml[(pbase + gg) * 2 + 1] = 0.f;
		}
		return;
	}
	float qr[PMAXG][D];
#pragma unroll
	for (int gg = 0; gg < PMAXG; gg++)
#pragma unroll
		for (int i = 0; i < D; i++)
			qr[gg][i] = gg < G && D * lane + i < hd ? __ldcg(q + ((size_t)kvh * G + gg) * hd + D * lane + i) : 0.f;
	if (tid < PMAXG) {
		sh.mrun[tid] = NEG_INF;
		sh.lrun[tid] = 0.f;
	}
	const float* kh = kc + (size_t)kvh * nctx * hd;
	const float* vh = vc + (size_t)kvh * nctx * hd;
	float o[PMAXG];
#pragma unroll
	for (int gg = 0; gg < PMAXG; gg++) o[gg] = 0.f;
	for (int tile = t0; tile < t1; tile += 32) {
		const int L = min(32, t1 - tile);
#pragma unroll
		for (int u0 = 0; u0 < 8; u0 += PKU) { // PKU keys' loads in flight a pass: registers against latency
			float kr[PKU][D];
#pragma unroll
			for (int u = 0; u < PKU; u++) {
				const int tt = 8 * warp + u0 + u;
#pragma unroll
				for (int i = 0; i < D; i++)
					kr[u][i] = tt < L && D * lane + i < hd ? __ldcg(kh + (size_t)(tile + tt) * hd + D * lane + i) : 0.f;
			}
#pragma unroll
			for (int u = 0; u < PKU; u++) {
				const int tt = 8 * warp + u0 + u;
#pragma unroll
				for (int gg = 0; gg < PMAXG; gg++) {
					if (gg < G) {
						WARP_SCORE(sh.p[gg][tt], qr[gg], kr[u]);
					}
				}
			}
		}
		group_sync(g);
		for (int gg = warp; gg < G; gg += 4) {
			const float v = sh.p[gg][lane];
			const float mt = warp_max(v), mo = sh.mrun[gg], mn = fmaxf(mo, mt);
			const float e = lane < L ? expf(v - mn) : 0.f;
			sh.p[gg][lane] = e;
			const float l = warp_sum(e);
			if (lane == 0) {
				const float a = expf(mo - mn);
				sh.alpha[gg] = a;
				sh.lrun[gg] = sh.lrun[gg] * a + l;
				sh.mrun[gg] = mn;
			}
		}
		group_sync(g);
		if (tid < hd) {
			float acc[PMAXG];
#pragma unroll
			for (int gg = 0; gg < PMAXG; gg++) acc[gg] = 0.f;
			for (int tt = 0; tt < L; tt++) {
				const float vv = __ldcg(vh + (size_t)(tile + tt) * hd + tid);
#pragma unroll
				for (int gg = 0; gg < PMAXG; gg++)
					if (gg < G) acc[gg] += sh.p[gg][tt] * vv;
			}
#pragma unroll
			for (int gg = 0; gg < PMAXG; gg++)
				if (gg < G) o[gg] = o[gg] * sh.alpha[gg] + acc[gg];
		}
		group_sync(g);
	}
	if (tid < hd) {
#pragma unroll
		for (int gg = 0; gg < PMAXG; gg++)
			if (gg < G) po[(pbase + gg) * hd + tid] = o[gg];
	}
	if (tid < G) {
		pml[(pbase + tid) * 2] = sh.mrun[tid];
		pml[(pbase + tid) * 2 + 1] = sh.lrun[tid];
	}
}

// Head h's combined output (eattn_combine with nChunks = PSPLITS, one
// token) into out[0..hd) (shared), by a 128-thread group.
__device__ void pcombine(const PDecode& P, int h, float* out, float* wgt, float* invL, int g) {
	const int nHeads = (int)P.nHeads, hd = (int)P.hd, nChunks = PSPLITS;
	const int tid = threadIdx.x & 127, lane = tid & 31;
	const float* po = P.po;
	const float* pml = P.pml;
	const size_t base = h;
	if (tid < 32) {
		float M = NEG_INF;
		for (int c = lane; c < nChunks; c += 32) M = fmaxf(M, __ldcg(pml + (base + (size_t)c * nHeads) * 2));
		M = warp_max(M);
		float L = 0.f;
		for (int c = lane; c < nChunks; c += 32) {
			const float* ml = pml + (base + (size_t)c * nHeads) * 2;
			const float m0 = __ldcg(ml), l1 = __ldcg(ml + 1);
			const float e = l1 != 0.f ? expf(m0 - M) : 0.f;
			wgt[c] = e;
			L += e * l1;
		}
		L = warp_sum(L);
		if (lane == 0) *invL = 1.0f / L;
	}
	group_sync(g);
	for (int dd = tid; dd < hd; dd += 128) {
		float o = 0.f;
		for (int c = 0; c < nChunks; c++) o += wgt[c] * __ldcg(po + (base + (size_t)c * nHeads) * hd + dd);
		out[dd] = o * *invL;
	}
	group_sync(g);
}

// ---- the steps ----------------------------------------------------------------
// PSTEP: how the steps join the kernel. Inlined (the default), ptxas
// allocates the whole layer loop at once and values live across steps add
// to every step's pressure; PNOINLINE makes each step a call, so the
// kernel's budget is the largest step's (what a register budget under
// 255, PMINB > 1, needs).
#ifdef PNOINLINE
#define PSTEP __noinline__
#else
#define PSTEP __forceinline__
#endif


// The shared state of a block.
struct PShared {
	PDecode P;
	PLayer L;
	int layer; // the layer player_loop is in (the phase marks inside steps)
	double red[32];
	PAttnShared att[PG];
	__align__(16) float cbuf[PG][256]; // warp_q8_k reads float4s: not at the mercy of the fields before it
	float cw[PG][PSPLITS], cinv[PG];
};

// Dynamic shared memory: xs (max(dim, ffn) floats), then xq (the largest
// quantized activation row, + 16 bytes of slack for the Q8_0 reader).
__device__ __forceinline__ float* dyn_xs(u8* dyn) { return (float*)dyn; }
__device__ __forceinline__ u8* dyn_xq(const PDecode& P, u8* dyn) { return dyn + 4 * (size_t)max(P.dim, P.ffn); }

// PSTEP_DYN opens the steps whose matvecs read a row in dynamic shared
// memory: the decode's P, the layer's L, the row xs and its quants xq.
#define PSTEP_DYN            \
	const PDecode& P = S.P;  \
	const PLayer& L = S.L;   \
	float* xs = dyn_xs(dyn); \
	u8* xq = dyn_xq(P, dyn)

// A: norm, then Q/K/V two rows a warp: rotated pairs (the rope) for Q and K,
// the queries into q, the keys and the values into the cache at pos.
__device__ PSTEP void pstep_qkv(PShared& S, u8* dyn, int pos) {
	PSTEP_DYN;
	pnorm_quant(P, P.x, L.attn_norm, xs, xq, (int)L.qt[0], S.red);
	pmark(P, S.layer, 12);
	const int dim = (int)P.dim, hd = (int)P.hd, half = hd / 2, nctx = (int)P.nctx;
	const int qd = (int)P.nHeads * hd, kvd = (int)P.nKV * hd;
	const bool neox = P.flags & 2;
	const int lane = threadIdx.x & 31, gw = blockIdx.x * PW + (threadIdx.x >> 5), nw = gridDim.x * PW;
	const int nq = qd / 2, nk = kvd / 2, nt = nq + nk + kvd / 2;
	for (int t = gw; t < nt; t += nw) {
		int m, u; // matrix (0 q, 1 k, 2 v), pair index within it
		if (t < nq) {
			m = 0, u = t;
		} else if (t < nq + nk) {
			m = 1, u = t - nq;
		} else {
			m = 2, u = t - nq - nk;
		}
		const int head = u / half, i = u % half;
		int a, b;
		if (m == 2) {
			a = 2 * u, b = 2 * u + 1;
		} else {
			a = head * hd + (neox ? i : 2 * i), b = head * hd + (neox ? i + half : 2 * i + 1);
		}
		const int f = (int)L.f[m];
		const size_t rb = prow_bytes(f, dim);
		const u8* W = L.w[m];
		float x0, x1;
		pdot_pair(f, W + rb * a, W + rb * b, xq, dim, x0, x1);
		if (lane == 0) {
			if (m == 2) {
				float* vd = L.vc + ((size_t)(a / hd) * nctx + pos) * hd;
				vd[a % hd] = x0;
				vd[b % hd] = x1;
			} else {
				const float c = P.cosT[(size_t)pos * half + i], s = P.sinT[(size_t)pos * half + i];
				const float y0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
				const float y1 = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
				float* dst = m == 0 ? P.q + (size_t)head * hd : L.kc + ((size_t)head * nctx + pos) * hd;
				dst[a % hd] = y0;
				dst[b % hd] = y1;
			}
		}
	}
	if (P.flags & 1) { // O's rows, read after the attention
		const size_t ro = prow_bytes((int)L.f[3], qd);
		for (int t = gw; t < dim / 2; t += nw) l2_prefetch(L.w[3] + ro * 2 * t, 2 * ro, lane);
	}
}

// B: the attention splits, a 128-thread group each.
__device__ PSTEP void pstep_attn(PShared& S, int pos) {
	const PDecode& P = S.P;
	const PLayer& L = S.L;
	const int hd = (int)P.hd, grp = threadIdx.x >> 7;
	for (int item = blockIdx.x * PG + grp; item < PSPLITS * (int)P.nKV; item += gridDim.x * PG) {
		const int s = item % PSPLITS, kvh = item / PSPLITS;
		if (hd > 64) {
			pdattn<4>(P, L.kc, L.vc, pos, s, kvh, grp, S.att[grp]);
		} else if (hd > 32) {
			pdattn<2>(P, L.kc, L.vc, pos, s, kvh, grp, S.att[grp]);
		} else {
			pdattn<1>(P, L.kc, L.vc, pos, s, kvh, grp, S.att[grp]);
		}
		group_sync(grp); // the group's shared state is reused by its next item
	}
}

// C: combine and quantize for O, a span of whole heads and whole
// activation blocks a group.
__device__ PSTEP void pstep_combine(PShared& S) {
	const PDecode& P = S.P;
	const int hd = (int)P.hd, qd = (int)P.nHeads * hd, grp = threadIdx.x >> 7, wg = (threadIdx.x >> 5) & 3;
	const int qt = (int)S.L.qt[1], bs = qt == 1 ? QK_K : 32, span = max(bs, hd), nh = span / hd, nqb = span / bs;
	for (int item = blockIdx.x * PG + grp; item < qd / span; item += gridDim.x * PG) {
		for (int j = 0; j < nh; j++) pcombine(P, item * nh + j, S.cbuf[grp] + j * hd, S.cw[grp], &S.cinv[grp], grp);
		for (int b = wg; b < nqb; b += 4) {
			const size_t at = (size_t)item * nqb + b;
			if (qt == 1) {
				warp_q8_k(P.xqa + at * 292, S.cbuf[grp] + b * QK_K);
			} else {
				warp_q8_0(P.xqa + at * 34, S.cbuf[grp] + b * 32);
			}
		}
		group_sync(grp);
	}
}

// Rows 2t, 2t+1 of W (format f, k values) over the grid's warps, each
// added into x: O and down.
__device__ __forceinline__ void presidual(float* x, const u8* W, int f, int rows, const u8* xq, int k) {
	const int lane = threadIdx.x & 31, gw = blockIdx.x * PW + (threadIdx.x >> 5), nw = gridDim.x * PW;
	const size_t rb = prow_bytes(f, k);
	for (int t = gw; t < rows / 2; t += nw) {
		float v0, v1;
		pdot_pair(f, W + rb * 2 * t, W + rb * (2 * t + 1), xq, k, v0, v1);
		if (lane == 0) {
			x[2 * t] = __fadd_rn(__ldcg(x + 2 * t), v0);
			x[2 * t + 1] = __fadd_rn(__ldcg(x + 2 * t + 1), v1);
		}
	}
}

// D: the quantized attention output into shared memory, O added into x.
__device__ PSTEP void pstep_o(PShared& S, u8* dyn) {
	const PDecode& P = S.P;
	const PLayer& L = S.L;
	u8* xq = dyn_xq(P, dyn);
	const int dim = (int)P.dim, qd = (int)P.nHeads * (int)P.hd, ffn = (int)P.ffn;
	const int qt = (int)L.qt[1], nbytes = pact_bytes(qd, qt);
	for (int i = threadIdx.x; i < nbytes / 4; i += PT) ((u32*)xq)[i] = __ldcg((const u32*)P.xqa + i);
	if (threadIdx.x == 0 && (nbytes & 3)) ((u16*)xq)[nbytes / 2 - 1] = __ldcg((const u16*)P.xqa + nbytes / 2 - 1);
	__syncthreads();
	pmark(P, S.layer, 13);
	presidual(P.x, L.w[3], (int)L.f[3], dim, xq, qd);
	if (P.flags & 1) { // gate's and up's rows
		const int lane = threadIdx.x & 31, gw = blockIdx.x * PW + (threadIdx.x >> 5), nw = gridDim.x * PW;
		const size_t rg = prow_bytes((int)L.f[4], dim), ru = prow_bytes((int)L.f[5], dim);
		for (int t = gw; t < ffn; t += nw) {
			l2_prefetch(L.w[4] + rg * t, rg, lane);
			l2_prefetch(L.w[5] + ru * t, ru, lane);
		}
	}
}

// E: norm, gate and up row r by one warp, h[r] = silu(gate)·up.
__device__ PSTEP void pstep_gateup(PShared& S, u8* dyn) {
	PSTEP_DYN;
	pnorm_quant(P, P.x, L.ffn_norm, xs, xq, (int)L.qt[2], S.red);
	pmark(P, S.layer, 14);
	const int dim = (int)P.dim, ffn = (int)P.ffn;
	const int lane = threadIdx.x & 31, gw = blockIdx.x * PW + (threadIdx.x >> 5), nw = gridDim.x * PW;
	const int f = (int)L.f[4]; // gate and up have one format (the host's check)
	const size_t rb = prow_bytes(f, dim);
	for (int r = gw; r < ffn; r += nw) {
		float v, u;
		pdot_pair(f, L.w[4] + rb * r, L.w[5] + rb * r, xq, dim, v, u);
		if (lane == 0) P.h[r] = v / (1.0f + expf(-v)) * u;
	}
	if (P.flags & 1) { // down's rows
		const size_t rd = prow_bytes((int)L.f[6], ffn);
		for (int t = gw; t < dim / 2; t += nw) l2_prefetch(L.w[6] + rd * 2 * t, 2 * rd, lane);
	}
}

// F: h quantized into shared memory, down added into x; with next set,
// that layer's Q/K/V rows prefetched (flags & 1).
__device__ PSTEP void pstep_down(PShared& S, u8* dyn, const PLayer* next) {
	PSTEP_DYN;
	const int dim = (int)P.dim, ffn = (int)P.ffn;
	for (int i = threadIdx.x; i < ffn; i += PT) xs[i] = __ldcg(P.h + i);
	__syncthreads();
	pquantize(xq, xs, ffn, (int)L.qt[3]);
	__syncthreads();
	pmark(P, S.layer, 15);
	presidual(P.x, L.w[6], (int)L.f[6], dim, xq, ffn);
	if (next && (P.flags & 1)) {
		const int lane = threadIdx.x & 31, gw = blockIdx.x * PW + (threadIdx.x >> 5), nw = gridDim.x * PW;
		const int hd = (int)P.hd, qd = (int)P.nHeads * hd, kvd = (int)P.nKV * hd;
		for (int m = 0; m < 3; m++) {
			const u8* W = (const u8*)__ldg((const u64*)&next->w[m]);
			const size_t rb = prow_bytes((int)__ldg(&next->f[m]), dim);
			const int rows = m == 0 ? qd : kvd;
			for (int t = gw; t < rows / 2; t += nw) l2_prefetch(W + rb * 2 * t, 2 * rb, lane);
		}
	}
}

// ---- the layer loop -------------------------------------------------------------

// player_loop walks layers [l0, l1) through steps' four products (st.qkv,
// st.o, st.gateup, st.down: persistent.cu's or mega.cu's) with the
// attention and its combine between, grid barriers between the dependent
// steps and the phase marks (flags & 8) around each.
template <typename Steps>
__device__ __forceinline__ void player_loop(PShared& S, int l0, int l1, int pos, Steps& st) {
	int bar = 0;
	for (int layer = l0; layer < l1; layer++) {
		if (threadIdx.x < PLAYER_WORDS) ((u64*)&S.L)[threadIdx.x] = __ldg((const u64*)(S.P.layers + layer) + threadIdx.x);
		if (threadIdx.x == 0) S.layer = layer;
		__syncthreads();
		pmark(S.P, layer, 0);
		st.qkv(layer);
		pmark(S.P, layer, 1);
		grid_sync(S.P, bar++);
		pmark(S.P, layer, 2);
		pstep_attn(S, pos);
		pmark(S.P, layer, 3);
		grid_sync(S.P, bar++);
		pmark(S.P, layer, 4);
		pstep_combine(S);
		pmark(S.P, layer, 5);
		grid_sync(S.P, bar++);
		pmark(S.P, layer, 6);
		st.o(layer);
		pmark(S.P, layer, 7);
		grid_sync(S.P, bar++);
		pmark(S.P, layer, 8);
		st.gateup(layer);
		pmark(S.P, layer, 9);
		grid_sync(S.P, bar++);
		pmark(S.P, layer, 10);
		st.down(layer);
		pmark(S.P, layer, 11);
		if (layer + 1 < l1) grid_sync(S.P, bar++);
	}
}

// ---- the kernel ---------------------------------------------------------------

// mega.cu compiles this file for its device functions only.
#ifndef PERSISTENT_DEVICE_ONLY

extern "C" __global__ void __launch_bounds__(PT, PMINB) persistent_decode(const PDecode* gP, int l0, int l1) {
	extern __shared__ __align__(16) u8 dyn[];
	__shared__ __align__(16) PShared S;
	if (threadIdx.x < PDECODE_WORDS) ((u64*)&S.P)[threadIdx.x] = __ldg((const u64*)gP + threadIdx.x);
	__syncthreads();
	struct Steps {
		PShared& S;
		u8* dyn;
		int pos, l1;
		__device__ void qkv(int) { pstep_qkv(S, dyn, pos); }
		__device__ void o(int) { pstep_o(S, dyn); }
		__device__ void gateup(int) { pstep_gateup(S, dyn); }
		__device__ void down(int layer) { pstep_down(S, dyn, layer + 1 < l1 ? S.P.layers + layer + 1 : nullptr); }
	} st{S, dyn, __ldcg(S.P.posp), l1};
	player_loop(S, l0, l1, st.pos, st);
}

// ---- the matvec alone: the ledger's cuda-persist --------------------------------

// dst[r] = W[r]·x with the persistent kernel's rows: x (one activation row
// of k values, code qt) staged in shared memory by every block, then rows
// two a warp over the grid (an odd last row paired with itself).
extern "C" __global__ void __launch_bounds__(PT, 1) pmv(float* dst, const u8* w, int rows, const u8* x, int k, int f, int qt) {
	extern __shared__ __align__(16) u8 dyn[];
	const int nbytes = pact_bytes(k, qt);
	for (int i = threadIdx.x; i < nbytes; i += PT) dyn[i] = x[i];
	__syncthreads();
	const int lane = threadIdx.x & 31, gw = blockIdx.x * PW + (threadIdx.x >> 5), nw = gridDim.x * PW;
	const size_t rb = prow_bytes(f, k);
	for (int t = gw; 2 * t < rows; t += nw) {
		const int a = 2 * t, b = min(2 * t + 1, rows - 1);
		float v0, v1;
		pdot(f, w + rb * a, w + rb * b, dyn, k, v0, v1);
		if (lane == 0) {
			dst[a] = v0;
			if (b != a) dst[b] = v1;
		}
	}
}

#endif // PERSISTENT_DEVICE_ONLY
