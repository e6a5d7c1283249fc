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
func packActivations(pack, xq []byte, j0, j1, n, nb int, sum32 bool) {
	if !packAsm || j0 >= j1 || nb <= 0 {
		packActivationsGo(pack, xq, j0, j1, n, nb, sum32)
		return
	}
	rowBytes := nb * q8kBytes
	_, _ = pack[activationPackBytes(n, nb)-1], xq[j1*rowBytes-1]
	clearPadding(pack, j1, n, nb)
	for t := j0; t < j1; t++ {
		p, tp := t/pairTokens, t%pairTokens
		base := p * nb * aSBBytes
		tileOff := (tp/tileRows)*tileBytes + (tp%tileRows)*chunkK
		packTokenQ8K(&pack[base+aTiles+tileOff], &pack[base+aD+4*tp], &pack[base+aBsums+32*tp], &xq[t*rowBytes], nb, sum32)
	}
}
