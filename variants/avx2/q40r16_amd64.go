//go:build !noasm

package avx2

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// q40r16DotAVX2 (PREFETCHT0) and q40r16DotAVX2N (PREFETCHNTA): groups
// groups of 16 interleaved Q4_0 rows, nb blocks each, against one token's
// activations laid out by PrepareQ40R16, every weight line prefetched dist
// bytes ahead when dist > 0 (q40r16_amd64.s).
//
//go:noescape
func q40r16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q40r16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)

func init() {
	feats := []string{"avx2", "fma", "f16c"}
	const note = "Q4_0 rows interleaved 16 to a 64-byte line (q40r16.go, 18 bytes a row and block as stored), each line two 256-bit halves of 8 rows: " +
		"nibbles by VPAND/VPANDN from memory and a word shift, VPMADDUBSW against the broadcast activation dwords, a block's 8 products added in words, " +
		"VPMADDWD by ones, less 8·Σx, d_w·d_x by one FMA a block and 8 rows (the one-row avx2 kernel: ≈ 20 instructions a block and row)"
	for _, v := range []struct {
		suffix string
		dot    func(w, x *byte, dst *float32, nb, groups, dist int)
		dist   int
		how    string
	}{{"", q40r16DotAVX2, 0, ""}, {"-pf8k", q40r16DotAVX2, 8192, "; every weight line prefetched 8 KiB ahead (PREFETCHT0)"},
		{"-nta8k", q40r16DotAVX2N, 8192, "; every weight line prefetched 8 KiB ahead (PREFETCHNTA)"}} {
		dot := interleavedDot(v.dot, 32)
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_0), Name: "avx2-r16" + v.suffix, Family: ledger.FamilyAVX2,
			Features: feats, Layout: Q40R16Layout, Impl: avx512.R16MatVec(Q40R16Layout, dot, v.dist), Notes: note + v.how})
		if v.suffix == "-nta8k" {
			ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_0), Name: "avx2-r16" + v.suffix, Family: ledger.FamilyAVX2,
				Features: feats, Layout: Q40R16Layout, Impl: interleavedBatch(Q40R16Layout, 32, dot, v.dist),
				Notes: "matvec/q4_0:avx2-r16" + v.suffix + " for each token in turn over blocks of rows of about 128 KiB (from memory for the first token, from L2 for the others), " +
					"on the layout the matvec and the matmul read; each token's results are the matvec's"})
		}
	}
}
