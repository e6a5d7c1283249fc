//go:build !noasm

package avx512

import (
	"fmt"
	"slices"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// HaveQ4KR16 says this build has the interleaved kernel's assembly.
const HaveQ4KR16 = true

// q4kr16Dot: groups groups of 16 interleaved rows, nb super-blocks each,
// against one token's activations (q4kr16_amd64.s).
//
//go:noescape
func q4kr16Dot(w, x *byte, dst *float32, nb, groups int)

// q4kr16DotPf is q4kr16Dot with every weight line prefetched dist bytes
// ahead.
//
//go:noescape
func q4kr16DotPf(w, x *byte, dst *float32, nb, groups, dist int)

// q4kr16DotH and q4kr16DotM are q4kr16Dot with a lighter line (the high
// nibbles taken in place; DotM folds the load into both ANDs): the same
// results, bit for bit.
//
//go:noescape
func q4kr16DotH(w, x *byte, dst *float32, nb, groups int)

//go:noescape
func q4kr16DotM(w, x *byte, dst *float32, nb, groups int)

// q4kr16DotMX is q4kr16DotM prefetching the next super-block's
// activations.
//
//go:noescape
func q4kr16DotMX(w, x *byte, dst *float32, nb, groups int)

// q4kr16DotMXC is q4kr16DotMX with two accumulator chains a sub-block.
//
//go:noescape
func q4kr16DotMXC(w, x *byte, dst *float32, nb, groups int)

// q4kr16DotMXPf is q4kr16DotMX with every weight line prefetched dist
// bytes ahead.
//
//go:noescape
func q4kr16DotMXPf(w, x *byte, dst *float32, nb, groups, dist int)

// q6kr16DotX is q6kr16Dot without weight prefetch, prefetching the next
// super-block's activations.
//
//go:noescape
func q6kr16DotX(w, x *byte, dst *float32, nb, groups int)

// q4kr16Dot2 runs groups pairs of groups: group i of w (sums at dst)
// beside group i of w2 (sums at dst2), two streams in one pass.
//
//go:noescape
func q4kr16Dot2(w, x *byte, dst *float32, nb, groups int, w2 *byte, dst2 *float32)

// q4kr16DotMXPf1 is q4kr16DotMXPf with PREFETCHT1 (to L2) for the
// weight lines.
//
//go:noescape
func q4kr16DotMXPf1(w, x *byte, dst *float32, nb, groups, dist int)

// q6kr16DotPf1 is q6kr16Dot prefetching every weight line dist bytes
// ahead with PREFETCHT1 (to L2).
//
//go:noescape
func q6kr16DotPf1(w, x *byte, dst *float32, nb, groups, dist int)

// q4kr16Dot2N is q4kr16Dot2 with the next super-block's activations
// prefetched and both streams' weight lines prefetched dist ahead with
// PREFETCHNTA.
//
//go:noescape
func q4kr16Dot2N(w, x *byte, dst *float32, nb, groups int, w2 *byte, dst2 *float32, dist int)

// q4kr16DotMXPfN and q6kr16DotPfN are the PREFETCHNTA twins of
// q4kr16DotMXPf1 and q6kr16DotPf1 (non-temporal: the weights are read
// once a token).
//
//go:noescape
func q4kr16DotMXPfN(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q6kr16DotPfN(w, x *byte, dst *float32, nb, groups, dist int)

// q4kr16DotMXY is q4kr16DotMX in 256-bit halves of each line (rows 0-7,
// then 8-15), the same results bit for bit.
//
//go:noescape
func q4kr16DotMXY(w, x *byte, dst *float32, nb, groups int)

// q4kr16DotMK is q4kr16DotM over nb super-blocks of groups stride bytes
// apart, adding to dst (one column chunk of a k-blocked product).
//
//go:noescape
func q4kr16DotMK(w, x *byte, dst *float32, nb, groups, stride int)

// q4kr16DotM4: q4kr16Dot for four tokens' activations, xstride bytes
// apart, token t's sums at dst + t·ldd floats (q4kr16m_amd64.s).
//
//go:noescape
func q4kr16DotM4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

// q4kr16F8, q4kr16F4 and q4kr16F1: the float-scaled batched kernels for
// eight, four and one token (q4kr16f_amd64.s), q4kr16DotM4's arguments.
//
//go:noescape
func q4kr16F8(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

//go:noescape
func q4kr16F4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

//go:noescape
func q4kr16F1(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

// q6kr16F8, q6kr16F4 and q6kr16F1: their Q6_K twins.
//
//go:noescape
func q6kr16F8(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

//go:noescape
func q6kr16F4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

//go:noescape
func q6kr16F1(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

// q6kr16DotM4: q4kr16DotM4's Q6_K twin (q4kr16m_amd64.s).
//
//go:noescape
func q6kr16DotM4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

// q6kr16Dot: q4kr16Dot's Q6_K twin (q6kr16.go), with every weight line
// prefetched dist bytes ahead when dist > 0.
//
//go:noescape
func q6kr16Dot(w, x *byte, dst *float32, nb, groups, dist int)

// The interleaved kernels as ledger variants over their weight layouts,
// without software prefetch and with it 4 and 8 KiB ahead.
func init() {
	feats := []string{"avx512f", "avx512bw", "avx512vnni"}
	for _, pf := range []struct {
		suffix string
		dist   int
	}{{"", 0}, {"-pf4k", 4096}, {"-pf8k", 8192}} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_K), Name: "avx512-vnni-r16" + pf.suffix, Family: ledger.FamilyAVX512VNNI,
			Features: feats, Layout: Q4KR16Layout, Impl: r16MatVec(Q4KR16Layout, Q4KR16MatVec, pf.dist),
			Notes: "rows interleaved 16 to a vector at load (q4kr16.go: 148 bytes a row and super-block against 144), ≈ 6.6 instructions a 64-byte line, no horizontal sums. BenchmarkReadMix: on Zen 5 one core streams 90% of plain loads without prefetch (shipped 69-84%); on the lent Intel host ≈ 80% with pf4k/pf8k (shipped 65-74%). Engine A/B before the seam (DAMASCUS_R16): Intel 3B tg128 71% (pf4k) and 85% (pf8k) of the huge-page probe on two hosts; AMD 3B tg64 +3-12% at 1 thread, level at 2"})
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q6_K), Name: "avx512-vnni-r16" + pf.suffix, Family: ledger.FamilyAVX512VNNI,
			Features: feats, Layout: Q6KR16Layout, Impl: r16MatVec(Q6KR16Layout, Q6KR16MatVec, pf.dist),
			Notes: "the Q6_K twin of matvec/q4_k:avx512-vnni-r16 (q6kr16.go: 210 bytes a row and super-block, as Q6_K, laid out sub-block by sub-block; a three-region layout streamed a third as fast). In cache 3.6 ns a super-block row against the shipped 7.6-7.8"})
	}
	for _, v := range []struct {
		name string
		dot  func(w, x *byte, dst *float32, nb, groups int)
		note string
		vl   bool // 256-bit EVEX forms
	}{
		{"avx512-vnni-r16-h", q4kr16DotH, "matvec/q4_k:avx512-vnni-r16 with a lighter line: the high nibbles taken in place (v & 0xf0, their products 16× and shifted back once a sub-block, exact), 5 instructions a line against 6; the same results bit for bit. AMD dev VM, 3B shapes, 2 threads (run 20261204T172734Z-725fad): 0.94-1.20× r16", false},
		{"avx512-vnni-r16-hmx", q4kr16DotMX, "avx512-vnni-r16-hm prefetching the next super-block's activations at each block (a group of a long row, 74 KiB at 8192 columns, streams more than L1 between two reads of the same activations); the same results bit for bit. AMD dev VM, 3B shapes, 2 threads (run 725fad): the fastest r16 matvec at every shape, 1.11-1.33× r16; 1 thread within the VM's noise of it. Engine A/B in the AMD bundle: see results/README Session 24", false},
		{"avx512-vnni-r16-hmx-y", q4kr16DotMXY, "avx512-vnni-r16-hmx in 256-bit halves of each line (rows 0-7 from its first 32 bytes, 8-15 from its last; twice the instructions, none wider than 256 bits): " +
			"the AMD one-core question of issue 20 (llama.cpp's AVX2 Q4_K decode streams 20-30 % more on one Zen 4 core than the 512-bit r16 line); the same results bit for bit. A loser: the AMD bundle with it, 1B tg64 at 1 thread, 10 rounds, 24.30 → 23.22 tok/s (−4.5 %, p 0.22, run 20261204T200735Z-76643d): the 256-bit width is not what one core lacks", true},
		{"avx512-vnni-r16-hmx-c2", q4kr16DotMXC, "avx512-vnni-r16-hmx with two accumulator chains a sub-block (lines 0-1 and 2-3 apart, added before the shift): each chain two VPDPBUSDs deep instead of four, for one Zen 4 core's decode (issue 20); the same results bit for bit. A loser: AMD dev VM, 1B shapes, 1 thread, 10 runs (run 20261204T223334Z-125cd4): 0.96-1.02× -hmx (35.7 GB/s both at 512x2048), so the chains' latency is not what holds one core", false},
		{"avx512-vnni-r16-hm", q4kr16DotM, "avx512-vnni-r16-h with the line's load folded into both ANDs (4 instructions a line, the second read from L1); the same results bit for bit. AMD dev VM, 3B shapes, 2 threads (run 725fad): 1.03-1.28× r16", false},
	} {
		f := feats
		if v.vl {
			f = append(slices.Clip(feats), "avx512vl")
		}
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_K), Name: v.name, Family: ledger.FamilyAVX512VNNI,
			Features: f, Layout: Q4KR16Layout, Impl: r16MatVec(Q4KR16Layout, func(dst []float32, w, xr []byte, k, _ int) {
				if len(dst) > 0 {
					v.dot(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/Q4KR16Rows)
				}
			}, 0), Notes: v.note})
	}
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_K), Name: "avx512-vnni-r16-hmx-pf4k", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q4KR16Layout, Impl: r16MatVec(Q4KR16Layout, func(dst []float32, w, xr []byte, k, dist int) {
			if len(dst) > 0 {
				q4kr16DotMXPf(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/Q4KR16Rows, dist)
			}
		}, 4096), Notes: "avx512-vnni-r16-hmx with every weight line prefetched 4 KiB ahead, as avx512-vnni-r16-pf4k prefetches r16's: tried in the Intel bundle (whose decode reads most with pf4k); the same results bit for bit. Not promoted on Intel: engine A/B in the Intel bundle on the lent host, 10 rounds, 3B tg64 +1.4 % (p 0.39), pp16 +4.5 % (p 0.09) (run 20261204T191711Z-0cce07); on a Zen 4 VM (family 25) level in the AMD bundle (run 20261204T192336Z-6a9460) and 0.89× at 1 thread (run 20261205T005800Z-0f410d). Promoted on Zen 5 (family 26) with its Q6_K twin r16-pf4k as bundle one-all-hmx-pf4k: 3B tg64 +35 % (p 0.0015, 10 rounds, run 20261205T022300Z-a61043), 1B tg64 +37 % at 1 thread (run 20261205T022025Z-4770cc), where the Zen 4 bundle's hmx had read 58 % of the one-thread probe"})
	// L2 prefetch, 8, 16 and 32 KiB ahead (issue 20): on the Intel host,
	// where pf4k's PREFETCHT0 stream read 79 % of the probe, 16 KiB won
	// over 8; 32 is the next distance to try there.
	registerR16Prefetched(feats, "l2pf", []int{8, 16, 32}, q4kr16DotMXPf1, q6kr16DotPf1, func(d int) (string, string) {
		return fmt.Sprintf("avx512-vnni-r16-hmx with every weight line prefetched %d KiB ahead into L2 (PREFETCHT1: the L2 miss queue, not the line fill buffers the loads need); the same results bit for bit. On the lent Intel host, with its Q6_K twin in the Intel bundle, 3B tg64, 8 rounds (run 20261204T204624Z-2612d0): -l2pf8k +11.8 %% (p 3e-4), -l2pf16k +14.1 %% (p 1.6e-4), both paired 1.127× by round: -l2pf16k promoted in the Intel bundle l2pf16k; the 3B tg128 as shipped then read 93 %% of the huge-page probe (5 rounds, run 20261204T205430Z-b15788). A loser on the AMD dev VM: -l2pf8k with its Q6_K twin in the AMD bundle, 20 rounds, 3B tg64 -9.5 %% (p 7e-5, run 20261204T192923Z-07db12)", d),
			fmt.Sprintf("matvec/q6_k:avx512-vnni-r16 with every weight line prefetched %d KiB ahead into L2 (PREFETCHT1); the same results bit for bit. Intel and AMD A/Bs: see matvec/q4_k:avx512-vnni-r16-hmx-l2pf%dk (promoted with it on Intel at 16 KiB)", d, d)
	})
	// Non-temporal prefetch, 4, 8 and 16 KiB ahead (issue 20, Zen 5: the
	// stored layout's avx512-vnni-pf8k-nta read the most of the shipped
	// kernels in BenchmarkReadMix there, 58 GB/s at 2 threads against
	// -hmx-pf4k's 51).
	registerR16Prefetched(feats, "nta", []int{4, 8, 16}, q4kr16DotMXPfN, q6kr16DotPfN, func(d int) (string, string) {
		return fmt.Sprintf("avx512-vnni-r16-hmx with every weight line prefetched %d KiB ahead with PREFETCHNTA (non-temporal: read once a token); the same results bit for bit. Zen 5 VM (family 26), against the Zen 5 bundle one-all-hmx-pf4k (PREFETCHT0 4 KiB), with the Q6_K twin: 1B tg128 at 1 thread, 10 rounds (run 20261205T023831Z-bf118b) -nta8k +10.0 %% (p 4e-5, every round faster), -nta16k +9.2 %%; 3B tg64 at 2 threads (run 20261205T023525Z-9073ad, 10 rounds) -nta4k +5.8 %%, -nta8k +8.7 %% (p 0.12-0.17), then -nta8k over 16 rounds (run 20261205T025310Z-0e2f63) +6.6 %% (p 0.0075), pp16 +4.2 %%: promoted for Zen 5 as bundle one-all-hmx-nta8k", d),
			fmt.Sprintf("matvec/q6_k:avx512-vnni-r16 with every weight line prefetched %d KiB ahead with PREFETCHNTA; the same results bit for bit. A/B: see matvec/q4_k:avx512-vnni-r16-hmx-nta%dk", d, d)
	})
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_K), Name: "avx512-vnni-r16-2s-nta8k", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q4KR16Layout, Impl: r16MatVec(Q4KR16Layout, func(dst []float32, w, xr []byte, k, dist int) {
			q4kr16TwoStreams(dst, w, xr, k, dist, q4kr16Dot2N, q4kr16DotMXPfN)
		}, 8192),
		Notes: "avx512-vnni-r16-2s with the Zen 5 bundle's prefetches: the next super-block's activations (PREFETCHT0, as -hmx) and both streams' weight lines 8 KiB ahead (PREFETCHNTA, as -hmx-nta8k); the same results bit for bit (issue 20: a plain two-stream read beats one stream by 10-20 % on Zen 5). Level there: in place of -hmx-nta8k in the Zen 5 bundle, 1B at 2 threads, 10 rounds (run 20261205T032635Z-34dd95): tg128 0.984× paired (p 0.48), pp16 1.003×"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q6_K), Name: "avx512-vnni-r16-x", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q6KR16Layout, Impl: r16MatVec(Q6KR16Layout, func(dst []float32, w, xr []byte, k, _ int) {
			if len(dst) > 0 {
				q6kr16DotX(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/Q4KR16Rows)
			}
		}, 0), Notes: "matvec/q6_k:avx512-vnni-r16 prefetching the next super-block's activations at each block, as matvec/q4_k:avx512-vnni-r16-hmx does; the same results bit for bit. Level with r16 (AMD dev VM, 3B shapes, 2 threads, run 20261204T174512Z-d4ab52: 0.99-1.03×; the Q6_K r16 already reads 83-105 % of the probe there), so not A/B'd"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_K), Name: "avx512-vnni-r16-2s", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q4KR16Layout, Impl: r16MatVec(Q4KR16Layout, func(dst []float32, w, xr []byte, k, _ int) {
			q4kr16TwoStreams(dst, w, xr, k, 0, q4kr16Dot2D, q4kr16DotMD)
		}, 0), Notes: "avx512-vnni-r16-hm over two streams: the first half of a call's groups beside the second, in one pass (a core's prefetchers follow two sequences; the activation dwords broadcast once for both); the same results bit for bit. A loser: AMD dev VM, 3B shapes, 2 threads (run 725fad) 0.99-1.28× r16, behind -hm and -hmx at 4 of 5 shapes; a plain two-stream read does beat one stream on one Zen 4 core (+4-9 %, the memory probe takes it). On a Zen 5 VM (family 26), without prefetch, in place of the Zen 5 bundle's -hmx-nta8k: 1B tg128 at 2 threads 0.82× (8 rounds, run 20261205T031113Z-c2aa2f)"})
	for _, kc := range []int{8} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_K), Name: fmt.Sprintf("avx512-vnni-r16-hm-kc%d", kc), Family: ledger.FamilyAVX512VNNI,
			Features: feats, Layout: Q4KR16Layout, Impl: r16MatVec(Q4KR16Layout, func(dst []float32, w, xr []byte, k, _ int) {
				q4kr16KBlocked(dst, w, xr, k, kc)
			}, 0), Notes: fmt.Sprintf("avx512-vnni-r16-hm k-blocked: %d super-blocks (%d columns) of every group, then the next %d, so a chunk's activations stay in L1 while a long row's weights stream past (the 3B ffn_down's groups are 74 KiB, more than Zen 5's 48 KiB L1); the same results bit for bit. A loser: AMD dev VM, 3B shapes, 2 threads (run 725fad) 0.69-0.87× r16, 1 thread 0.55-0.7× (the stream broken every chunk; kc4 and kc16 were slower still or level, removed)", kc, kc*256, kc)})
	}
	// Row-blocked (issue 19 item 4, short prompts): a block of rows read
	// once for every token of the call, from L1 (32 KiB) or L2 (256 KiB).
	for _, rb := range []int{32, 256} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: fmt.Sprintf("avx512-vnni-r16-m4-rb%dk", rb), Family: ledger.FamilyAVX512VNNI,
			Features: feats, Layout: Q4KR16Layout, Impl: ledger.MatMul(func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
				Q4KR16MatMulRB(dst, ldd, w, rows, xr, n, k, rb<<10)
			}), Notes: fmt.Sprintf("matvec_batch/q4_k:avx512-vnni-r16-m4 over blocks of rows of about %d KiB of weights, each block's tokens before the next: "+
				"the matrix streamed from memory once a call instead of once every four tokens (a 16-token step of the 3B read ≈ 7.8 GB for 1.95 GB of weights); each token's results bit for bit -m4's. "+
				"Level on the AMD dev VM, whose L3 already serves the repeated passes (-rb256k, 3B, 8 rounds, run 20261204T223552Z-01aeb8: pp16 paired 0.948×, p 0.23; pp64 1.004×; "+
				"-rb32k a little slower in a quick look); for the Intel host, whose 3B pp16 (≈ 50 tok/s) is what 4 passes over the weights at its bandwidth allow", rb)})
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q6_K), Name: fmt.Sprintf("avx512-vnni-r16-m4-rb%dk", rb), Family: ledger.FamilyAVX512VNNI,
			Features: feats, Layout: Q6KR16Layout, Impl: ledger.MatMul(func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
				Q6KR16MatMulRB(dst, ldd, w, rows, xr, n, k, rb<<10)
			}), Notes: fmt.Sprintf("the Q6_K twin of matvec_batch/q4_k:avx512-vnni-r16-m4-rb%dk; bit for bit -m4's", rb)})
	}
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "avx512-vnni-r16-m4", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q4KR16Layout, Impl: q4kr16Batch,
		Notes: "the batched decode product over the interleaved layout (q4kr16m.go): four tokens a pass, each weight line loaded and split into nibbles once for eight VPDPBUSDs; each token's results are matvec/q4_k:avx512-vnni-r16's bits. Shares the layout (one copy) with the r16 matvecs"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "avx512-vnni-r16-f8", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q4KR16Layout, Impl: ledger.MatMul(Q4KR16MatMulF),
		Notes: "issue 19 item 4 (short prompts on Intel, whose 512-bit integer glue takes VPDPBUSD's ports one for one): the batched decode product over the interleaved layout, eight tokens a pass, " +
			"the rows' scales applied in float (one conversion and FMA a token and sub-block for -m4's VPADDD, two-uop VPMULLD and VPADDD; the mins by VPDPWSSD); a line's nibbles feed sixteen VPDPBUSDs. " +
			"Its own bits, the same for a token in every pass width (eight, four, one). On the Zen 5 VM (family 26, adds beside the multiplies) about level: in L2 0.77-0.79 against -m4's 0.71-0.74 TOPS (one core, n=16, the BenchmarkShortInCache of variants/amx), " +
			"3B at 2 threads in place of the bundle's -m4 (8 rounds, run 20261205T054231Z-b99c13) pp16 0.968×, pp64 1.035×, pp128 0.996× paired, none significant; " +
			"with its Q6_K twin too (10 rounds, run 20261205T072801Z-d788ae) pp16 -10.4 % (p 0.029, paired 0.920×), pp64 0.988×, pp128 1.059×: a loser on Zen 5 at pp16. For the Intel host: untimed there yet"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q6_K), Name: "avx512-vnni-r16-f8", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q6KR16Layout, Impl: ledger.MatMul(Q6KR16MatMulF),
		Notes: "the Q6_K twin of matvec_batch/q4_k:avx512-vnni-r16-f8: eight tokens a pass, each k-quad of 6-bit quants built once for eight VPDPBUSDs, a token's sub-block (less 32 × its sum) converted and folded in by one FMA with d·sc; its own bits, the same in every pass width. Zen 5 VM in L2: level with -m4 (0.53-0.59 against 0.56-0.59 TOPS, n=8 and 16)"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q6_K), Name: "avx512-vnni-r16-m4", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q6KR16Layout, Impl: q6kr16Batch,
		Notes: "the Q6_K twin of matvec_batch/q4_k:avx512-vnni-r16-m4: a sub-block's four weight vectors built once from its nibbles and top bits for sixteen VPDPBUSDs; each token's results are matvec/q6_k:avx512-vnni-r16's bits"})
}

// q4kr16KBlocked runs q4kr16DotMK over the columns kc super-blocks at a
// time (dst a whole number of groups): each group's sums are accumulated
// in the order q4kr16Dot accumulates them, so the results are its bits.
func q4kr16KBlocked(dst []float32, w, xr []byte, k, kc int) {
	if len(dst) == 0 {
		return
	}
	clear(dst)
	nb, groups := k/quant.QK_K, len(dst)/Q4KR16Rows
	for c := 0; c < nb; c += kc {
		n := min(kc, nb-c)
		q4kr16DotMK(&w[c*Q4KR16Bytes], &xr[c*Q4KR16ActBytes], &dst[0], n, groups, nb*Q4KR16Bytes)
	}
}

// q4kr16TwoStreams runs the first half of dst's groups beside the second
// through pair (q4kr16Dot2 or q4kr16Dot2N), an odd group out alone through
// one, each with dist.
func q4kr16TwoStreams(dst []float32, w, xr []byte, k, dist int,
	pair func(w, x *byte, dst *float32, nb, groups int, w2 *byte, dst2 *float32, dist int), one func(w, x *byte, dst *float32, nb, groups, dist int)) {
	groups := len(dst) / Q4KR16Rows
	if groups == 0 {
		return
	}
	nb, half := k/quant.QK_K, groups/2
	gb := nb * Q4KR16Bytes
	if half > 0 {
		pair(&w[0], &xr[0], &dst[0], nb, half, &w[half*gb], &dst[half*Q4KR16Rows], dist)
	}
	if groups%2 == 1 {
		one(&w[(groups-1)*gb], &xr[0], &dst[(groups-1)*Q4KR16Rows], nb, 1, dist)
	}
}

// q4kr16Dot2D and q4kr16DotMD are q4kr16Dot2 and q4kr16DotM with
// q4kr16TwoStreams's dist argument, unused.
func q4kr16Dot2D(w, x *byte, dst *float32, nb, groups int, w2 *byte, dst2 *float32, _ int) {
	q4kr16Dot2(w, x, dst, nb, groups, w2, dst2)
}

func q4kr16DotMD(w, x *byte, dst *float32, nb, groups, _ int) { q4kr16DotM(w, x, dst, nb, groups) }

// registerR16Prefetched registers, for each distance d in kib (KiB), the
// Q4_K matvec avx512-vnni-r16-hmx-<hint>dk over q4 and the Q6_K matvec
// avx512-vnni-r16-<hint>dk over q6, each prefetching every weight line d
// KiB ahead, with the notes notes(d) gives.
func registerR16Prefetched(feats []string, hint string, kib []int, q4, q6 func(w, x *byte, dst *float32, nb, groups, dist int), notes func(d int) (q4note, q6note string)) {
	for _, d := range kib {
		q4note, q6note := notes(d)
		for _, v := range []struct {
			op, name string
			lay      *ledger.WeightLayout
			dot      func(w, x *byte, dst *float32, nb, groups, dist int)
			note     string
		}{
			{ledger.MatVecOp(quant.Q4_K), fmt.Sprintf("avx512-vnni-r16-hmx-%s%dk", hint, d), Q4KR16Layout, q4, q4note},
			{ledger.MatVecOp(quant.Q6_K), fmt.Sprintf("avx512-vnni-r16-%s%dk", hint, d), Q6KR16Layout, q6, q6note},
		} {
			dot := v.dot
			ledger.Register(ledger.Variant{Op: v.op, Name: v.name, Family: ledger.FamilyAVX512VNNI, Features: feats, Layout: v.lay,
				Impl: r16MatVec(v.lay, func(dst []float32, w, xr []byte, k, dist int) {
					if len(dst) > 0 {
						dot(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/Q4KR16Rows, dist)
					}
				}, d<<10), Notes: v.note})
		}
	}
}
