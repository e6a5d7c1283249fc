//go:build !noasm

package avx512

import (
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

// q4kr16DotM4: q4kr16Dot for four tokens' activations, xstride bytes
// apart, token t's sums at dst + t·ldd floats (q4kr16m_amd64.s).
//
//go:noescape
func q4kr16DotM4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

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
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "avx512-vnni-r16-m4", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q4KR16Layout, Impl: q4kr16Batch,
		Notes: "the batched decode product over the interleaved layout (q4kr16m.go): four tokens a pass, each weight line loaded and split into nibbles once for eight VPDPBUSDs; each token's results are matvec/q4_k:avx512-vnni-r16's bits. Shares the layout (one copy) with the r16 matvecs"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q6_K), Name: "avx512-vnni-r16-m4", Family: ledger.FamilyAVX512VNNI,
		Features: feats, Layout: Q6KR16Layout, Impl: q6kr16Batch,
		Notes: "the Q6_K twin of matvec_batch/q4_k:avx512-vnni-r16-m4: a sub-block's four weight vectors built once from its nibbles and top bits for sixteen VPDPBUSDs; each token's results are matvec/q6_k:avx512-vnni-r16's bits"})
}
