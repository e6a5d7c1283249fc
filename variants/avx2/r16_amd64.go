//go:build !noasm

package avx2

import (
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

func init() {
	const bits = "; the results of avx512-vnni-r16 bit for bit"
	registerInterleaved(quant.Q4_K, avx512.Q4KR16Layout, quant.QK_K, q4kr16DotAVX2, q4kr16DotAVX2N, kForms, []string{"", "-nta8k"},
		"the interleaved layout (16 rows a 64-byte line, as the avx512-vnni-r16 kernels read it) in 256-bit halves for CPUs without AVX-512: "+
			"a line's halves split into nibbles (VPAND/VPANDN from memory, a word shift), VPMADDUBSW against the broadcast activation dwords, "+
			"word sums over a sub-block's four lines (≤ 30720, exact), VPMADDWD by the rows' scale words (a VPSHUFB of the 16 scale bytes); mins by VPMADDWD of the byte pairs"+bits)
	registerInterleaved(quant.Q6_K, avx512.Q6KR16Layout, quant.QK_K, q6kr16DotAVX2, q6kr16DotAVX2N, kForms, []string{"", "-nta8k"},
		"the interleaved layout (16 rows a 64-byte line, as the avx512-vnni-r16 kernels read it) in 256-bit halves for CPUs without AVX-512: "+
			"a sub-block's four k-quads built from its nibbles and top bits (shifts, masks, ORs: R6_BUILD without VPTERNLOGD), VPMADDUBSW against the broadcast activation dwords, "+
			"pairs of word sums (≤ 32256, exact) widened by VPMADDWD by ones, less 32 × the activations' sum, times the rows' signed scales (VPMULLD)"+bits)
}

// kForms are the K-quant kernels' forms, blockForms the 32-value block
// types' (fewer: the K-quants' sweep, run 20261205T213121Z-873ff9, put the
// 8 KiB forms ahead).
var (
	kForms     = []avx512.PrefetchForm{{Suffix: "", Dist: 0}, {Suffix: "-pf4k", Dist: 4096}, {Suffix: "-pf8k", Dist: 8192}, {Suffix: "-nta4k", Dist: 4096, NTA: true}, {Suffix: "-nta8k", Dist: 8192, NTA: true}}
	blockForms = []avx512.PrefetchForm{{Suffix: "", Dist: 0}, {Suffix: "-pf8k", Dist: 8192}, {Suffix: "-nta8k", Dist: 8192, NTA: true}}
)

// registerInterleaved registers a weight type's avx2-r16 matvecs and
// batched products (avx512.RegisterR16).
func registerInterleaved(typ quant.Type, lay *ledger.WeightLayout, blockValues int, t0, nta func(w, x *byte, dst *float32, nb, groups, dist int),
	forms []avx512.PrefetchForm, batch []string, note string) {
	avx512.RegisterR16(avx512.R16Family{Name: "avx2-r16", Family: ledger.FamilyAVX2, Features: []string{"avx2", "fma", "f16c"}},
		typ, lay, blockValues, t0, nta, forms, batch, note)
}
