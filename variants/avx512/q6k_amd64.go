//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func q6kRowsAVX512(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q6kRowsVNNI(dst *float32, rows int, w, xq *byte, nb int)

var (
	// MatVecQ6K computes dst[r] = W[r]·x for Q6_K weights and Q8_K
	// activations with AVX-512BW (VPMADDUBSW, VPMADDWD).
	MatVecQ6K = rowops.BlockMatVec(q6kRowsAVX512, 256)
	// MatVecQ6KVNNI is MatVecQ6K with the scale multiply-accumulate done by
	// AVX512-VNNI's VPDPWSSD.
	MatVecQ6KVNNI = rowops.BlockMatVec(q6kRowsVNNI, 256)
)

//go:noescape
func q6kRowsVNNIPrefetch(dst *float32, rows int, w, xq *byte, nb, dist int)

// q6kRowsVNNIPrefetchT2 is q6kRowsVNNIPrefetch with PREFETCHT2.
//
//go:noescape
func q6kRowsVNNIPrefetchT2(dst *float32, rows int, w, xq *byte, nb, dist int)

// q6kRowsVNNIPrefetchNTA is q6kRowsVNNIPrefetch with PREFETCHNTA.
//
//go:noescape
func q6kRowsVNNIPrefetchNTA(dst *float32, rows int, w, xq *byte, nb, dist int)

// q6kRowsVNNIPrefetchPage is q6kRowsVNNIPrefetch prefetching only four
// lines at each 4 KiB page boundary the window dist bytes ahead reaches.
//
//go:noescape
func q6kRowsVNNIPrefetchPage(dst *float32, rows int, w, xq *byte, nb, dist int)

// MatVecQ6KVNNIPrefetch is MatVecQ6KVNNI with software prefetches 2 KiB
// ahead of the weights.
var MatVecQ6KVNNIPrefetch = matVecPrefetch(q6kRowsVNNIPrefetch, 2048)

//go:noescape
func q6kRows4VNNI(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ6K4VNNI is MatVecQ6KVNNI taking four rows per pass, so the
// activation loads and loop overhead are shared (fourRows).
func MatVecQ6K4VNNI(dst []float32, w, xq []byte, k int) {
	fourRows(q6kRows4VNNI, 210, dst, w, xq, k)
}

func init() {
	registerMatVec(quant.Q6_K, "avx512", MatVecQ6K,
		"one row at a time; unsigned 6-bit quants by VPMADDUBSW, VPERMW-spread scales by VPMADDWD, the -32 offset from bsums")
	registerMatVec(quant.Q6_K, "avx512-vnni", MatVecQ6KVNNI,
		"as avx512, with VPDPWSSD folding the scale multiply and the accumulate")
	registerMatVec(quant.Q6_K, "avx512-vnni-prefetch", MatVecQ6KVNNIPrefetch,
		"as avx512-vnni, with PREFETCHT0 2 KiB ahead of the weight stream (crosses 4 KiB pages, where the hardware prefetcher stops)")
	registerMatVec(quant.Q6_K, "avx512-vnni-4row", MatVecQ6K4VNNI,
		"as avx512-vnni, four rows per pass sharing the activation loads. A first interleaved ledger run on the shared 2-vCPU VM had it slower than one row on the large shapes (four interleaved weight streams), level on cache-resident ones")
	registerPrefetchSweep(quant.Q6_K, q6kRowsVNNIPrefetch, q6kRowsVNNIPrefetchT2, q6kRowsVNNIPrefetchNTA, q6kRowsVNNIPrefetchPage)
}
