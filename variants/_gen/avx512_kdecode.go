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

	"github.com/mmcloughlin/avo/ir"

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
			[4]VecPhysical{Z14, Z15, Z24, Z25}, func() { mQ4k4PfActivations.use(nil, dist) }, q4k4RowBlock)
		fourRowKernel(fmt.Sprintf("q6kRows4VNNIPf%dk", kib), q6kBytes, q6kConstants,
			fmt.Sprintf("pgroup6_%d", kib), fmt.Sprintf("pblock6_%d", kib),
			[4]VecPhysical{Z20, Z21, Z22, Z23}, func() { mQ6k4PfActivations.use(nil, dist) }, q6k4RowBlock)
	}
	f := form{"xpq4k", true, 3, "q4kRowsVNNIXPrefetch", "func(dst *float32, rows int, w, xa *byte, nb, dist int)", t0, false}
	rowKernel(f, q4kxPrologue, rowLoop{[]VecPhysical{Z24, Z25}, vpxord, q4kxBlock, q4kBytes, actBytes, func() { rowStore(Z24, Z25) }})
}

// actBytes is one super-block of the x layout (layoutQ8K in variants/avx512).
const actBytes = 320

// The four-row prefetch forms' per-block step: the prefetches of the four
// rows dist bytes ahead (dist a macro parameter, so the displacements are
// written as expressions), then the activations. The rows are at SI, SI+R9,
// R12 and R12+R9 (fourRowKernel's registers); PF_PAIRS3(base, dist)
// prefetches three lines of the rows at base and base+R9, PF_PAIRS4 four.
var (
	mPfPairs3 = def512("PF_PAIRS3(base, dist)",
		"prefetches three lines of the rows at base and base+R9, dist bytes ahead.",
		func() { pfPairs("base", 0, 3) }, "base", "dist")
	mPfPairs4 = def512("PF_PAIRS4(base, dist)",
		"is PF_PAIRS3 and the rows' fourth lines.",
		func() { placeholder("PF_PAIRS3(base, dist)"); pfPairs("base", 3, 4) }, "base", "dist")
	mQ4k4PfActivations = def512("Q4K4_PF_ACTIVATIONS(dist)",
		"prefetches three lines of each of the four rows dist bytes ahead, then\n// Q4K4_ACTIVATIONS.",
		func() { mPfPairs3.use(nil, "SI", "dist"); mPfPairs3.use(nil, "R12", "dist"); q4k4Activations() }, "dist")
	mQ6k4PfActivations = def512("Q6K4_PF_ACTIVATIONS(dist)",
		"prefetches four lines of each of the four rows dist bytes ahead, then\n// Q6K4_ACTIVATIONS.",
		func() { mPfPairs4.use(nil, "SI", "dist"); mPfPairs4.use(nil, "R12", "dist"); q6k4Activations() }, "dist")
)

// pfPairs prefetches lines from to to-1 of the rows at base and base+R9,
// dist bytes ahead (base and dist the macro's parameters).
func pfPairs(base string, from, to int) {
	for i := from; i < to; i++ {
		a.Instruction(&ir.Instruction{Opcode: fmt.Sprintf("PREFETCHT0 (dist+%d)(%s)", 64*i, base)})
		a.Instruction(&ir.Instruction{Opcode: fmt.Sprintf("PREFETCHT0 (dist+%d)(%s)(R9*1)", 64*i, base)})
	}
}
