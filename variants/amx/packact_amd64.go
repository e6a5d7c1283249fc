//go:build !noasm

package amx

import "github.com/damascus-llm/damascus/internal/cpufeat"

//go:noescape
func packTokenQ8K(tiles, dx, bsums, src *byte, nb int, sum32 bool)

// packTokenQ8K's constants: a super-block of the pack is 9344 bytes, its
// token tiles' chunks 2048 apart (this fails to compile if they move).
var (
	_ [0]struct{} = [aSBBytes - 9344]struct{}{}
	_ [0]struct{} = [2*tileBytes - 2048]struct{}{}
	_ [0]struct{} = [q8kBytes - 292]struct{}{}
)

// packAsm: the AVX-512 token packer runs here.
var packAsm = len(cpufeat.Missing("avx512f", "avx512bw", "avx512vl")) == 0

// packActivations is packActivationsGo with each token's super-blocks
// moved by packTokenQ8K: 64-byte vector copies of the quants and the sums
// of 32 by VPMADDWD, instead of a copy call per 64 bytes.
func packActivations(pack, xq []byte, n, nb int, sum32 bool) {
	if !packAsm || n <= 0 || nb <= 0 {
		packActivationsGo(pack, xq, n, nb, sum32)
		return
	}
	rowBytes := nb * q8kBytes
	pairs := (n + pairTokens - 1) / pairTokens
	_, _ = pack[pairs*nb*aSBBytes-1], xq[n*rowBytes-1]
	if n%pairTokens != 0 { // padding tokens of the last pair must be zero
		clear(pack[(pairs-1)*nb*aSBBytes : pairs*nb*aSBBytes])
	}
	for t := 0; t < n; t++ {
		p, tp := t/pairTokens, t%pairTokens
		base := p * nb * aSBBytes
		tileOff := (tp/tileRows)*tileBytes + (tp%tileRows)*chunkK
		packTokenQ8K(&pack[base+aTiles+tileOff], &pack[base+aD+4*tp], &pack[base+aBsums+32*tp], &xq[t*rowBytes], nb, sum32)
	}
}
