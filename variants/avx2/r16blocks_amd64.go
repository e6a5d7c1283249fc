//go:build !noasm

package avx2

import (
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// q40r16DotAVX2 (PREFETCHT0) and q40r16DotAVX2N (PREFETCHNTA): groups
// groups of 16 interleaved Q4_0 rows, nb blocks each, against one token's
// activations laid out by avx512.PrepareQ40R16, every weight line prefetched dist
// bytes ahead when dist > 0 (q40r16_amd64.s).
//
//go:noescape
func q40r16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q40r16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)

// q80r16DotAVX2 and q80r16DotAVX2N: the interleaved Q8_0 kernel.
//
//go:noescape
func q80r16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q80r16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)

func init() {
	const note40 = "Q4_0 rows interleaved 16 to a 64-byte line (r16blocks.go, 18 bytes a row and block as stored), each line two 256-bit halves of 8 rows: " +
		"nibbles by VPAND/VPANDN from memory and a word shift, VPMADDUBSW against the broadcast activation dwords, a block's 8 products added in words, " +
		"VPMADDWD by ones, less 8·Σx, d_w·d_x by one FMA a block and 8 rows (the one-row avx2 kernel: ≈ 20 instructions a block and row)"
	const note80 = "Q8_0 rows interleaved 16 to a 64-byte line (r16blocks.go, 34 bytes a row and block as stored), each line two 256-bit halves of 8 rows: " +
		"|w|·x·sign(w) by VPSIGNB and VPMADDUBSW against the broadcast activation dword, VPMADDWD by ones, d_w·d_x by one FMA a block and 8 rows. " +
		"A loser: 0.82-1.03× the one-row avx2 Q8_0 kernel at the 1B shapes, every form (AVX-512 hidden, Zen 5 VM, 2 threads, run 20261205T223308Z-917db8): " +
		"at 34 bytes a block the one-row kernel's ≈ 12 instructions a block already keep up with the memory, as Q4_0's 18-byte blocks do not"
	registerInterleaved(quant.Q4_0, avx512.Q40R16Layout, 32, q40r16DotAVX2, q40r16DotAVX2N, blockForms, []string{"-nta8k"}, note40)
	registerInterleaved(quant.Q8_0, avx512.Q80R16Layout, 32, q80r16DotAVX2, q80r16DotAVX2N, blockForms, []string{"-nta8k"}, note80)
}
