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

// Measured on the lent Intel host at 2 threads (run 20261204T030314Z-c48e78,
// 8 runs, 3B shapes, medians against the promoted pf4k; the fractions are of
// that run's 28.7 GB/s huge-page probe). Every form was refused by ledger
// promote and stays here as a loser with its numbers.
var decodeNotes = map[string]string{
	"q4_k/4row-pf4k": "10-30% slower than pf4k (attn_q 336 vs 265 µs, ffn_up 872 vs 739, output 14.9 vs 11.5 ms): 50-75% of the probe",
	"q4_k/4row-pf8k": "level to 23% slower than pf4k (ffn_down 959 vs 778 µs, output 12.2 vs 11.5 ms; attn_kv 64 vs 72 µs): 50-93% of the probe",
	"q4_k/x-pf4k":    "2-11% faster than pf4k at every shape (attn_q 259 vs 265 µs, attn_kv 64 vs 72, ffn_up 701 vs 739, ffn_down 756 vs 778, output 10.8 vs 11.5 ms: 63-93% of the probe against 61-83%), refused (significant at 2 of 5 shapes); a third fewer instructions bought about 5%, so the kernels' instructions are not what holds Intel decode at ~70% of the probe. The 3B tg128 with it forced: 9.98 vs 7.02 tok/s beside llama.cpp, 70% of the probe (run 20261204T030604Z-34d72c)",
	"q4_k/x-pf8k":    "as x-pf4k (258, 62.5, 703, 757 µs, 10.9 ms; over pf8k +2.2/+13.3/+4.3/+7.8/+6.4%, significant at 2 of 5 shapes), refused",
	"q6_k/4row-pf4k": "20-30% slower than pf4k (attn_q 453 vs 352 µs, output 19.6 vs 15.1 ms): 49-61% of the probe",
	"q6_k/4row-pf8k": "level with pf4k/pf8k (attn_q 360 vs 352 µs, ffn_down 981 vs 971, output 15.7 vs 15.1 ms)",
}

func init() {
	for _, kib := range []int{4, 8} {
		q4, q6 := q4kRows4VNNIPf4k, q6kRows4VNNIPf4k
		if kib == 8 {
			q4, q6 = q4kRows4VNNIPf8k, q6kRows4VNNIPf8k
		}
		intel := func(key string) string {
			return fmt.Sprintf(". On the lent Intel host at 2 threads (run 20261204T030314Z-c48e78): %s", decodeNotes[fmt.Sprintf(key, kib)])
		}
		registerMatVec(quant.Q4_K, fmt.Sprintf("avx512-vnni-4row-pf%dk", kib),
			func(dst []float32, w, xq []byte, k int) { fourRows(q4, 144, dst, w, xq, k) },
			fmt.Sprintf("avx512-vnni-4row with PREFETCHT0s %d KiB ahead of each of its four row streams: the kernel with fewer instructions a row (activations and dx loaded once for four rows) for the Intel cores, where decode is the weight stream and the arithmetic overlapping poorly (issue 20)", kib)+intel("q4_k/4row-pf%dk"))
		registerMatVec(quant.Q6_K, fmt.Sprintf("avx512-vnni-4row-pf%dk", kib),
			func(dst []float32, w, xq []byte, k int) { fourRows(q6, 210, dst, w, xq, k) },
			fmt.Sprintf("avx512-vnni-4row with PREFETCHT0s %d KiB ahead of each of its four row streams (see matvec/q4_k's avx512-vnni-4row-pf%dk)", kib, kib)+intel("q6_k/4row-pf%dk"))
		registerMatVec(quant.Q4_K, fmt.Sprintf("avx512-vnni-x-pf%dk", kib), matVecXPrefetch(kib<<10),
			fmt.Sprintf("avx512-vnni-x (activations laid out once a call, ~46 instructions a super-block instead of ~70) with PREFETCHT0s %d KiB ahead, its layout buffer sized to the row: for the Intel cores at 2 threads, where decode is the weight stream and the arithmetic overlapping poorly (issue 20)", kib)+intel("q4_k/x-pf%dk"))
	}
}
