// mega.cu: the decode megakernel (DAMASCUS_CUDA_DECODE=mega in model/llama).
//
// persistent.cu's layer steps and grid barriers, with one change: a block
// no longer loads its weight rows when it reaches them. Every block owns a
// fixed, contiguous slice of every product's rows (QKV, O, gate/up, down),
// so the bytes it will read in a whole step are known before the step
// starts; it streams them in that order into a ring in its shared memory
// with cp.async (L2-only, 16 bytes a thread), as far ahead as the ring
// allows, across the grid barriers and the steps that read no weights (the
// attention and its combine). Session 10's persistent kernel lost because
// its warps had too few bytes in flight and every barrier drained them;
// here the stream keeps running while a block waits, and a product's rows
// are usually in shared memory when its inputs become ready.
//
// The stream is a sequence of rounds: up to 8 units of one product (a unit
// is a warp's work: a rotated pair of Q/K/V rows, a pair of O rows, gate
// row r with up row r, one down row), the units' rows contiguous in memory
// (one or, for gate/up, two copies). An issuing cursor and a consuming
// cursor walk the same sequence and place each round at the same ring
// offset (a round never wraps: it starts at 0 when it would not fit), so
// nothing but counts is shared between them. Every thread commits one
// cp.async group a round; before a round is read the block waits until at
// most the rounds issued after it are pending, then synchronizes; a
// round's space is reused only after the synchronization of the round after
// it. One __syncthreads a round.
//
// The arithmetic is persistent.cu's, row for row (pdot with SH: the same
// loads from shared memory; a down row alone is pdot's first row), so the
// logits are the persistent kernel's bits (TestMegaDecodeAgrees).

struct MDecode {
	PDecode P;      // persistent.cu's parameters
	long long ring; // ring bytes a block: a multiple of 16, at least the largest round
};
#define MDECODE_WORDS (PDECODE_WORDS + 1)
#define MUNITS 8 // units a round: one a warp
#define MAHEAD 16 // rounds issued and not yet read, at most (cp.async.wait_group takes an immediate)

// ---- the stream's schedule -------------------------------------------------------

// A layer's word i (persistent.cu's PLayer) through the read-only path:
// the issuing cursor runs ahead into layers the block has not loaded.
__device__ __forceinline__ long long mlayer_word(const PDecode& P, int layer, int i) {
	return (long long)__ldg((const u64*)(P.layers + layer) + i);
}

// Units of product op (0 QKV pairs, 1 O pairs, 2 gate/up rows, 3 down rows).
__device__ __forceinline__ int munits(const PDecode& P, int op) {
	const int qd = (int)(P.nHeads * P.hd), kvd = (int)(P.nKV * P.hd);
	switch (op) {
	case 0: return (qd + 2 * kvd) / 2;
	case 1: return (int)P.dim / 2;
	case 2: return (int)P.ffn;
	default: return (int)P.dim;
	}
}

// This block's units [*u0, *u1) of product op.
__device__ __forceinline__ void mrange(const PDecode& P, int op, int& u0, int& u1) {
	const long long T = munits(P, op), b = blockIdx.x, n = gridDim.x;
	u0 = (int)(T * b / n);
	u1 = (int)(T * (b + 1) / n);
}

// A round: n units from unit u, copied from src0 (bytes0) then src1
// (bytes1); m is the matrix (0..6 as PLayer.w) of the first copy, row its
// first row, rb its rows' bytes, f its format.
struct MRound {
	const u8 *src0, *src1;
	int bytes0, bytes1, n, m, row, rb, f;
};

__device__ __forceinline__ MRound mround(const PDecode& P, int layer, int op, int u, int u1) {
	const int dim = (int)P.dim, qd = (int)(P.nHeads * P.hd), kvd = (int)(P.nKV * P.hd), ffn = (int)P.ffn;
	MRound r;
	r.src1 = nullptr;
	r.bytes1 = 0;
	int segEnd = u1, first = u, k = dim, rowsPerUnit = 2;
	switch (op) {
	case 0:
		if (u < qd / 2) {
			r.m = 0, segEnd = qd / 2, first = u;
		} else if (u < qd / 2 + kvd / 2) {
			r.m = 1, segEnd = qd / 2 + kvd / 2, first = u - qd / 2;
		} else {
			r.m = 2, segEnd = u1, first = u - qd / 2 - kvd / 2;
		}
		break;
	case 1: r.m = 3, k = qd; break;
	case 2: r.m = 4, rowsPerUnit = 1; break;
	default: r.m = 6, k = ffn, rowsPerUnit = 1; break;
	}
	r.n = min(MUNITS, min(u1, segEnd) - u);
	r.f = (int)mlayer_word(P, layer, 7 + r.m);
	r.rb = (int)prow_bytes(r.f, k);
	r.row = rowsPerUnit * first;
	r.src0 = (const u8*)mlayer_word(P, layer, r.m) + (size_t)r.rb * r.row;
	r.bytes0 = rowsPerUnit * r.n * r.rb;
	if (op == 2) { // up's rows after gate's (one format: the host's check)
		r.src1 = (const u8*)mlayer_word(P, layer, 5) + (size_t)r.rb * r.row;
		r.bytes1 = r.bytes0;
	}
	return r;
}

// A cursor over the stream of layers [layer, l1): the round at (layer,
// op, u), and lin, the ring's linear position where the next round goes.
struct MCursor {
	int layer, op, u, u1;
	long long lin;
};

// c at the first nonempty product from (layer, op) on.
__device__ __forceinline__ void mseek(const PDecode& P, MCursor& c, int l1) {
	for (; c.layer < l1; c.layer++, c.op = 0) {
		for (; c.op < 4; c.op++) {
			int u0, u1;
			mrange(P, c.op, u0, u1);
			if (u0 < u1) {
				c.u = u0, c.u1 = u1;
				return;
			}
		}
	}
}

__device__ __forceinline__ void madvance(const PDecode& P, MCursor& c, int n, int l1) {
	c.u += n;
	if (c.u < c.u1) return;
	c.op++;
	mseek(P, c, l1);
}

// Where a round of bytes goes from lin: its linear start (it never wraps).
__device__ __forceinline__ long long mplace(long long lin, int bytes, long long ring) {
	const long long off = lin % ring;
	return off + bytes > ring ? lin + (ring - off) : lin;
}

__device__ __forceinline__ void cp_async16(u8* dst, const u8* src) {
	const u32 d = (u32)__cvta_generic_to_shared(dst);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Wait until at most n of this thread's latest groups are pending (n is
// clamped to MAHEAD-1: waiting for more is still correct).
__device__ __forceinline__ void cp_async_wait(int n) {
	switch (n) {
#define MW(i) \
	case i: asm volatile("cp.async.wait_group " #i ";" ::: "memory"); break;
	MW(0) MW(1) MW(2) MW(3) MW(4) MW(5) MW(6) MW(7) MW(8) MW(9) MW(10) MW(11) MW(12) MW(13) MW(14)
#undef MW
	default: asm volatile("cp.async.wait_group 15;" ::: "memory"); break;
	}
}

// The block's stream: the issuing cursor, the counts, and where the oldest
// round still read (or about to be) starts. Every thread holds the same.
struct MStream {
	MCursor iss;
	int issued, consumed, l1;
	long long free_from; // rounds before this linear position may be overwritten
	long long ring;
	u8* base;
};

// Issue rounds while the ring has room.
__device__ __forceinline__ void mtopup(const PDecode& P, MStream& s) {
	while (s.iss.layer < s.l1 && s.issued - s.consumed < MAHEAD) {
		const MRound r = mround(P, s.iss.layer, s.iss.op, s.iss.u, s.iss.u1);
		const int bytes = r.bytes0 + r.bytes1;
		const long long at = mplace(s.iss.lin, bytes, s.ring);
		if (at + bytes > s.free_from + s.ring) break;
		u8* dst = s.base + at % s.ring;
		for (int i = 16 * threadIdx.x; i < r.bytes0; i += 16 * PT) cp_async16(dst + i, r.src0 + i);
		for (int i = 16 * threadIdx.x; i < r.bytes1; i += 16 * PT) cp_async16(dst + r.bytes0 + i, r.src1 + i);
		cp_async_commit();
		s.issued++;
		s.iss.lin = at + bytes;
		madvance(P, s.iss, r.n, s.l1);
	}
}

// The consuming side of product op of layer: its rounds in order, each
// waited for, then handed to body(round, ring bytes) with the block
// synchronized. A block may own no unit of a product (small models): con
// is at a later product or layer then, and nothing runs.
template <typename Body>
__device__ __forceinline__ void mconsume(const PDecode& P, MStream& s, MCursor& con, int layer, int op, Body body) {
	while (con.layer == layer && con.op == op) {
		const MRound r = mround(P, con.layer, con.op, con.u, con.u1);
		const int bytes = r.bytes0 + r.bytes1;
		const long long at = mplace(con.lin, bytes, s.ring);
		// The round was issued already: the ring holds three of the largest
		// rounds (the host's check), so the top-up after the round before
		// always had room for it.
		cp_async_wait(s.issued - s.consumed - 1);
		__syncthreads(); // every thread's copies of the round landed; every warp is done with the round before
		s.free_from = at;
		mtopup(P, s);
		body(r, s.base + at % s.ring);
		s.consumed++;
		con.lin = at + bytes;
		madvance(P, con, r.n, s.l1);
	}
}

// ---- the steps' products ---------------------------------------------------------

// A: Q/K/V, a rotated pair a warp (rows 2i, 2i+1: the host refuses NeoX).
__device__ __forceinline__ void mstep_qkv(PShared& S, MStream& s, MCursor& con, int layer, u8* dyn, int pos) {
	const PDecode& P = S.P;
	const PLayer& L = S.L;
	u8* xq = dyn_xq(P, dyn);
	pnorm_quant(P, P.x, L.attn_norm, dyn_xs(dyn), xq, (int)L.qt[0], S.red);
	const int dim = (int)P.dim, hd = (int)P.hd, half = hd / 2, nctx = (int)P.nctx;
	const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	mconsume(P, s, con, layer, 0, [&](const MRound& r, const u8* ring) {
		if (w >= r.n) return;
		float x0, x1;
		pdot<true, 2>(r.f, ring + (size_t)2 * w * r.rb, ring + (size_t)(2 * w + 1) * r.rb, xq, dim, x0, x1);
		if (lane != 0) return;
		const int a = r.row + 2 * w, head = a / hd, i = (a % hd) / 2;
		if (r.m == 2) {
			float* vd = L.vc + ((size_t)head * nctx + pos) * hd;
			vd[a % hd] = x0;
			vd[a % hd + 1] = x1;
		} else {
			const float c = P.cosT[(size_t)pos * half + i], sn = P.sinT[(size_t)pos * half + i];
			const float y0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, sn));
			const float y1 = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, c));
			float* dst = r.m == 0 ? P.q + (size_t)head * hd : L.kc + ((size_t)head * nctx + pos) * hd;
			dst[a % hd] = y0;
			dst[a % hd + 1] = y1;
		}
	});
}

// D: the quantized attention output into shared memory, O's pairs added into x.
__device__ __forceinline__ void mstep_o(PShared& S, MStream& s, MCursor& con, int layer, u8* dyn) {
	const PDecode& P = S.P;
	const PLayer& L = S.L;
	u8* xq = dyn_xq(P, dyn);
	const int qd = (int)P.nHeads * (int)P.hd, nbytes = pact_bytes(qd, (int)L.qt[1]);
	for (int i = threadIdx.x; i < nbytes / 4; i += PT) ((u32*)xq)[i] = __ldcg((const u32*)P.xqa + i);
	if (threadIdx.x == 0 && (nbytes & 3)) ((u16*)xq)[nbytes / 2 - 1] = __ldcg((const u16*)P.xqa + nbytes / 2 - 1);
	// mconsume synchronizes before the first round is read
	const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	float* x = P.x;
	mconsume(P, s, con, layer, 1, [&](const MRound& r, const u8* ring) {
		if (w >= r.n) return;
		float v0, v1;
		pdot<true, 2>(r.f, ring + (size_t)2 * w * r.rb, ring + (size_t)(2 * w + 1) * r.rb, xq, qd, v0, v1);
		if (lane == 0) {
			const int a = r.row + 2 * w;
			x[a] = __fadd_rn(__ldcg(x + a), v0);
			x[a + 1] = __fadd_rn(__ldcg(x + a + 1), v1);
		}
	});
}

// E: norm, gate row r and up row r by one warp, h[r] = silu(gate)·up.
__device__ __forceinline__ void mstep_gateup(PShared& S, MStream& s, MCursor& con, int layer, u8* dyn) {
	const PDecode& P = S.P;
	const PLayer& L = S.L;
	u8* xq = dyn_xq(P, dyn);
	pnorm_quant(P, P.x, L.ffn_norm, dyn_xs(dyn), xq, (int)L.qt[2], S.red);
	const int dim = (int)P.dim, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	mconsume(P, s, con, layer, 2, [&](const MRound& r, const u8* ring) {
		if (w >= r.n) return;
		float v, u;
		pdot<true, 2>(r.f, ring + (size_t)w * r.rb, ring + r.bytes0 + (size_t)w * r.rb, xq, dim, v, u);
		if (lane == 0) P.h[r.row + w] = v / (1.0f + expf(-v)) * u;
	});
}

// F: h quantized into shared memory, down's rows (one a warp) added into x.
__device__ __forceinline__ void mstep_down(PShared& S, MStream& s, MCursor& con, int layer, u8* dyn) {
	const PDecode& P = S.P;
	const PLayer& L = S.L;
	float* xs = dyn_xs(dyn);
	u8* xq = dyn_xq(P, dyn);
	const int ffn = (int)P.ffn;
	for (int i = threadIdx.x; i < ffn; i += PT) xs[i] = __ldcg(P.h + i);
	__syncthreads();
	pquantize(xq, xs, ffn, (int)L.qt[3]);
	const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
	float* x = P.x;
	mconsume(P, s, con, layer, 3, [&](const MRound& r, const u8* ring) {
		if (w >= r.n) return;
		float v, unused;
		pdot<true, 1>(r.f, ring + (size_t)w * r.rb, nullptr, xq, ffn, v, unused);
		if (lane == 0) {
			const int a = r.row + w;
			x[a] = __fadd_rn(__ldcg(x + a), v);
		}
	});
}

// ---- the kernel ---------------------------------------------------------------

// Dynamic shared memory: persistent.cu's xs and xq, then the ring at ringAt
// (16-byte aligned, after xq's slack: the host's layout).
extern "C" __global__ void __launch_bounds__(PT, 1) mega_decode(const MDecode* gM, int l0, int l1, int ringAt) {
	extern __shared__ __align__(16) u8 dyn[];
	__shared__ __align__(16) PShared S;
	if (threadIdx.x < PDECODE_WORDS) ((u64*)&S.P)[threadIdx.x] = __ldg((const u64*)gM + threadIdx.x);
	MStream s;
	s.ring = __ldg((const long long*)gM + PDECODE_WORDS);
	s.base = dyn + ringAt;
	s.issued = s.consumed = 0;
	s.l1 = l1;
	s.free_from = 0;
	__syncthreads();
	s.iss.layer = l0, s.iss.op = 0, s.iss.lin = 0;
	mseek(S.P, s.iss, l1);
	MCursor con = s.iss;
	mtopup(S.P, s); // the first layer's weights stream in under its norm
	struct Steps {
		PShared& S;
		MStream& s;
		MCursor& con;
		u8* dyn;
		int pos;
		__device__ void qkv(int layer) { mstep_qkv(S, s, con, layer, dyn, pos); }
		__device__ void o(int layer) { mstep_o(S, s, con, layer, dyn); }
		__device__ void gateup(int layer) { mstep_gateup(S, s, con, layer, dyn); }
		__device__ void down(int layer) { mstep_down(S, s, con, layer, dyn); }
	} st{S, s, con, dyn, __ldcg(S.P.posp)};
	player_loop(S, l0, l1, st.pos, st);
	asm volatile("cp.async.wait_all;" ::: "memory");
}

// ---- the matvec alone: the ledger's cuda-mega -------------------------------------

// dst[r] = W[r]·x with the megakernel's stream: x (one activation row of
// k values, code qt) staged in shared memory, this block's contiguous rows
// streamed through the ring at ringAt, rounds of up to MUNITS·NR rows, NR
// rows a warp read from there (NR 2: two rows' loads and sums interleaved,
// for the instruction-level parallelism that 8 warps a multiprocessor
// lack). It is mconsume's protocol on one product, so the ring's logic is
// gated on its own.
template <int NR>
__device__ __forceinline__ void mmv_body(float* dst, const u8* w, int rows, const u8* x, int k, int f, int qt, int ringAt, int ring) {
	extern __shared__ __align__(16) u8 dyn[];
	const int nbytes = pact_bytes(k, qt);
	for (int i = threadIdx.x; i < nbytes; i += PT) dyn[i] = x[i];
	const long long T = rows, nb = gridDim.x;
	const int u0 = (int)(T * blockIdx.x / nb), u1 = (int)(T * (blockIdx.x + 1) / nb);
	const int rb = (int)prow_bytes(f, k), lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
	u8* base = dyn + ringAt;
	int issued = 0, consumed = 0, ui = u0;
	long long lin = 0, free_from = 0, clin = 0;
	auto topup = [&]() {
		while (ui < u1 && issued - consumed < MAHEAD) {
			const int n = min(NR * MUNITS, u1 - ui), bytes = n * rb;
			const long long at = mplace(lin, bytes, ring);
			if (at + bytes > free_from + ring) break;
			const u8* src = w + (size_t)rb * ui;
			for (int i = 16 * threadIdx.x; i < bytes; i += 16 * PT) cp_async16(base + at % ring + i, src + i);
			cp_async_commit();
			issued++;
			lin = at + bytes;
			ui += n;
		}
	};
	topup();
	for (int u = u0; u < u1;) {
		const int n = min(NR * MUNITS, u1 - u), bytes = n * rb;
		const long long at = mplace(clin, bytes, ring);
		cp_async_wait(issued - consumed - 1);
		__syncthreads();
		free_from = at;
		topup();
		const int r0 = NR * wp;
		if (r0 < n) {
			const u8* ra = base + at % ring + (size_t)r0 * rb;
			float v0, v1;
			if (NR == 2 && r0 + 1 < n) {
				pdot<true, 2>(f, ra, ra + rb, dyn, k, v0, v1);
			} else {
				pdot<true, 1>(f, ra, nullptr, dyn, k, v0, v1);
			}
			if (lane == 0) {
				dst[u + r0] = v0;
				if (NR == 2 && r0 + 1 < n) dst[u + r0 + 1] = v1;
			}
		}
		consumed++;
		clin = at + bytes;
		u += n;
	}
	asm volatile("cp.async.wait_all;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(PT, 1) mmv(float* dst, const u8* w, int rows, const u8* x, int k, int f, int qt,
                                                         int ringAt, int ring) {
	mmv_body<1>(dst, w, rows, x, k, f, qt, ringAt, ring);
}
extern "C" __global__ void __launch_bounds__(PT, 1) mmv2(float* dst, const u8* w, int rows, const u8* x, int k, int f, int qt,
                                                          int ringAt, int ring) {
	mmv_body<2>(dst, w, rows, x, k, f, qt, ringAt, ring);
}
