//go:build !noasm

package avx2

import (
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// The interleaved layouts' decode kernels for CPUs without AVX-512
// (r16_amd64.s): the weights in variants/avx512's q4_k-r16 and q6_k-r16
// layouts, built once at load, each 64-byte line two 256-bit halves of 8
// rows. The one-row AVX2 kernels are bound by instructions (on a Zen 5
// core with AVX-512 hidden the 1B Q4_K_M decodes at about half the
// bandwidth the AVX-512 kernels read); these spend a super-block's
// scales, mins and sums once for 16 rows.

// q4kr16DotAVX2 and q6kr16DotAVX2: groups groups of 16 interleaved rows,
// nb super-blocks each, against one token's activations (laid out by the
// layout's Prepare), every weight line prefetched dist bytes ahead when
// dist > 0.
//
//go:noescape
func q4kr16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q6kr16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)

// q4kr16DotAVX2N and q6kr16DotAVX2N prefetch with PREFETCHNTA.
//
//go:noescape
func q4kr16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q6kr16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)

// r16Kernel is a whole-group kernel as avx512.R16MatVec takes it.
func r16Kernel(dot func(w, x *byte, dst *float32, nb, groups, dist int)) func(dst []float32, w, xr []byte, k, dist int) {
	return func(dst []float32, w, xr []byte, k, dist int) {
		if len(dst) > 0 {
			dot(&w[0], &xr[0], &dst[0], k/quant.QK_K, len(dst)/avx512.Q4KR16Rows, dist)
		}
	}
}

// r16BlockBytes is the weights a block of the batched product holds: read
// from memory for the first token, from L2 for the others.
const r16BlockBytes = 128 << 10

func init() {
	feats := []string{"avx2", "fma", "f16c"}
	for _, t := range []struct {
		typ        quant.Type
		lay        *ledger.WeightLayout
		dot, nta   func(w, x *byte, dst *float32, nb, groups, dist int)
		groupBytes int
		actBytes   int
		note       string
	}{
		{quant.Q4_K, avx512.Q4KR16Layout, q4kr16DotAVX2, q4kr16DotAVX2N, avx512.Q4KR16Bytes, avx512.Q4KR16ActBytes,
			"a line's halves split into nibbles (VPAND/VPANDN from memory, a word shift), VPMADDUBSW against the broadcast activation dwords, " +
				"word sums over a sub-block's four lines (≤ 30720, exact), VPMADDWD by the rows' scale words (a VPSHUFB of the 16 scale bytes); mins by VPMADDWD of the byte pairs"},
		{quant.Q6_K, avx512.Q6KR16Layout, q6kr16DotAVX2, q6kr16DotAVX2N, avx512.Q6KR16Bytes, avx512.Q6KR16ActBytes,
			"a sub-block's four k-quads built from its nibbles and top bits (shifts, masks, ORs: R6_BUILD without VPTERNLOGD), VPMADDUBSW against the broadcast activation dwords, " +
				"pairs of word sums (≤ 32256, exact) widened by VPMADDWD by ones, less 32 × the activations' sum, times the rows' signed scales (VPMULLD)"},
	} {
		for _, pf := range []struct {
			suffix string
			dist   int
			nta    bool
		}{{"", 0, false}, {"-pf4k", 4096, false}, {"-pf8k", 8192, false}, {"-nta4k", 4096, true}, {"-nta8k", 8192, true}} {
			dot, how := t.dot, fmt.Sprintf("; every weight line prefetched %d KiB ahead (PREFETCHT0)", pf.dist>>10)
			if pf.nta {
				dot, how = t.nta, fmt.Sprintf("; every weight line prefetched %d KiB ahead (PREFETCHNTA)", pf.dist>>10)
			}
			if pf.dist == 0 {
				how = ""
			}
			ledger.Register(ledger.Variant{Op: ledger.MatVecOp(t.typ), Name: "avx2-r16" + pf.suffix, Family: ledger.FamilyAVX2,
				Features: feats, Layout: t.lay, Impl: avx512.R16MatVec(t.lay, r16Kernel(dot), pf.dist),
				Notes: "the interleaved layout (16 rows a 64-byte line, as the avx512-vnni-r16 kernels read it) in 256-bit halves for CPUs without AVX-512: " + t.note +
					"; the results of avx512-vnni-r16 bit for bit" + how})
		}
		for _, b := range []struct {
			suffix string
			dot    func(w, x *byte, dst *float32, nb, groups, dist int)
			dist   int
		}{{"", t.dot, 0}, {"-nta8k", t.nta, 8192}} {
			ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(t.typ), Name: "avx2-r16" + b.suffix, Family: ledger.FamilyAVX2,
				Features: feats, Layout: t.lay, Impl: ledger.MatMul(func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
					avx512.R16MatMulOne(dst, ldd, w, rows, xr, n, k, r16BlockBytes, t.groupBytes, t.actBytes,
						func(w, x *byte, dst *float32, nb, groups int) { b.dot(w, x, dst, nb, groups, b.dist) })
				}),
				Notes: ledger.MatVecOp(t.typ) + ":avx2-r16" + b.suffix + " for each token in turn over blocks of rows of about 128 KiB (from memory for the first token, from L2 for the others): " +
					"the batched decode product on the layout the matvec and the matmul read, so the model holds one copy; each token's results are the matvec's"})
		}
	}
}
