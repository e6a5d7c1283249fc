//go:build !noasm

package avx512

import (
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The decode forms (kdecode_amd64.s): the kernels that spend fewer
// instructions a super-block, with q4k's software prefetches, for the Intel
// cores at 2 threads, where decode overlaps the weight stream and the
// arithmetic poorly (issue 20).

//go:noescape
func q4kRows4VNNIPf4k(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q4kRows4VNNIPf8k(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q6kRows4VNNIPf4k(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q6kRows4VNNIPf8k(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q4kRowsVNNIXPrefetch(dst *float32, rows int, w, xa *byte, nb, dist int)

// matVecXPrefetch is MatVecQ4KVNNIX with prefetches dist bytes ahead. The
// layout buffer is sized to the row (the models' k of 2048, 3072 and 8192
// need 8, 12 and 32 blocks), as Go zeroes it on every call.
func matVecXPrefetch(dist int) ledger.MatVec {
	return func(dst []float32, w, xq []byte, k int) {
		nb := k / 256
		switch {
		case len(dst) == 0 || nb == 0 || nb > maxActBlocks:
			matVecPrefetch(q4kRowsVNNIPrefetch, dist)(dst, w, xq, k)
		case nb <= 12:
			var buf [12*actBlock + 64]byte
			xPrefetchRows(buf[:], dst, w, xq, nb, dist)
		case nb <= 32:
			var buf [32*actBlock + 64]byte
			xPrefetchRows(buf[:], dst, w, xq, nb, dist)
		default:
			var buf [maxActBlocks*actBlock + 64]byte
			xPrefetchRows(buf[:], dst, w, xq, nb, dist)
		}
	}
}

// xPrefetchRows lays xq out in buf and runs the x-layout prefetch kernel.
func xPrefetchRows(buf []byte, dst []float32, w, xq []byte, nb, dist int) {
	xa := alignedAct(buf, nb*actBlock)
	layoutQ8K(xa, xq, nb)
	q4kRowsVNNIXPrefetch(&dst[0], len(dst), &w[0], &xa[0], nb, dist)
}

func init() {
	for _, kib := range []int{4, 8} {
		q4, q6 := q4kRows4VNNIPf4k, q6kRows4VNNIPf4k
		if kib == 8 {
			q4, q6 = q4kRows4VNNIPf8k, q6kRows4VNNIPf8k
		}
		registerMatVec(quant.Q4_K, fmt.Sprintf("avx512-vnni-4row-pf%dk", kib),
			func(dst []float32, w, xq []byte, k int) { fourRows(q4, 144, dst, w, xq, k) },
			fmt.Sprintf("avx512-vnni-4row with PREFETCHT0s %d KiB ahead of each of its four row streams: the kernel with fewer instructions a row (activations and dx loaded once for four rows) on the Intel cores, where decode is the weight stream and the arithmetic overlapping poorly (issue 20)", kib))
		registerMatVec(quant.Q6_K, fmt.Sprintf("avx512-vnni-4row-pf%dk", kib),
			func(dst []float32, w, xq []byte, k int) { fourRows(q6, 210, dst, w, xq, k) },
			fmt.Sprintf("avx512-vnni-4row with PREFETCHT0s %d KiB ahead of each of its four row streams (see matvec/q4_k's avx512-vnni-4row-pf%dk)", kib, kib))
		registerMatVec(quant.Q4_K, fmt.Sprintf("avx512-vnni-x-pf%dk", kib), matVecXPrefetch(kib<<10),
			fmt.Sprintf("avx512-vnni-x (activations laid out once a call, ~46 instructions a super-block instead of ~70) with PREFETCHT0s %d KiB ahead, its layout buffer sized to the row: for the Intel cores at 2 threads, where decode is the weight stream and the arithmetic overlapping poorly (issue 20)", kib))
	}
}
