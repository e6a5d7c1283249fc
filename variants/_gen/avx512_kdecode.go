package main

// Decode forms of the AVX-512 K-quant matvecs for the Intel cores at 2
// threads (issue 20), where decode reads about two thirds of the probe's
// bandwidth and a profile puts the time in the matvec kernels: the core
// both streams the weights and spends ~35 vector µops a super-block on
// ports 0 and 5, and the two overlap poorly. These forms keep q4k/q6k's
// arithmetic and add q4k's software prefetches to the kernels that spend
// fewer µops a super-block: the four-row kernels (activations and dx loaded
// once for four rows) and the x-layout kernel (activations laid out once a
// call, read as memory operands; scales unpacked in XMM).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx512", "kdecode_amd64.s", kdecodeFile)
}

// decodeDistances are the prefetch distances of the decode forms: the
// Intel winners of the one-row sweep (pf4k, pf8k).
var decodeDistances = []int{4, 8}

// kdecodeFile writes variants/avx512/kdecode_amd64.s:
//
// The four-row Q4_K and Q6_K kernels with PREFETCHT0s dist bytes ahead of
// each of the four row streams (lines cache lines a row a block, as the
// one-row prefetch forms), dist baked into the displacement (one kernel a
// distance: the four-row loop has no register to spare for it), and the
// x-layout Q4_K kernel with the one-row prefetch loop (dist an argument).
func kdecodeFile() {
	for _, kib := range decodeDistances {
		dist := kib << 10
		fourRowKernel(fmt.Sprintf("q4kRows4VNNIPf%dk", kib), q4kBytes, q4kConstants,
			fmt.Sprintf("pgroup%d", kib), fmt.Sprintf("pblock%d", kib),
			[4]VecPhysical{Z14, Z15, Z24, Z25}, func() { fourRowPrefetch(dist, 3); q4k4Activations() }, q4k4RowBlock)
		fourRowKernel(fmt.Sprintf("q6kRows4VNNIPf%dk", kib), q6kBytes, q6kConstants,
			fmt.Sprintf("pgroup6_%d", kib), fmt.Sprintf("pblock6_%d", kib),
			[4]VecPhysical{Z20, Z21, Z22, Z23}, func() { fourRowPrefetch(dist, 4); q6k4Activations() }, q6k4RowBlock)
	}
	f := form{"xpq4k", true, 3, "q4kRowsVNNIXPrefetch", "func(dst *float32, rows int, w, xa *byte, nb, dist int)", t0, false}
	rowKernel(f, q4kxPrologue, rowLoop{[]VecPhysical{Z24, Z25}, vpxord, q4kxBlock, q4kBytes, actBytes, func() { rowStore(Z24, Z25) }})
}

// actBytes is one super-block of the x layout (layoutQ8K in variants/avx512).
const actBytes = 320

// fourRowPrefetch prefetches lines cache lines of each of the four rows of
// a four-row block dist bytes ahead: the rows at SI, SI+R9, R12 and R12+R9
// (fourRowKernel's registers).
func fourRowPrefetch(dist, lines int) {
	for _, b := range []Register{RSI, R12} {
		for i := 0; i < lines; i++ {
			a.PREFETCHT0(m(b, dist+64*i))
			a.PREFETCHT0(mi(b, R9, dist+64*i))
		}
	}
}
