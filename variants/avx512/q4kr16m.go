package avx512

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// Q4KR16MatMul computes dst[j*ldd+r] = W[r]·X[j] for the rows of w
// (interleaved; the last group may be partial) and n tokens laid out one
// after another by PrepareQ4KR16 in xr (Q4KR16ActBytes a super-block
// each): four tokens at a time through one pass over the weights
// (q4kr16DotM4), the rest one at a time. Each token's results are the
// single-token kernel's (Q4KR16MatVec without prefetch), bit for bit,
// whatever n: the batched decode contract (matvec_batch), over the
// interleaved layout.
func Q4KR16MatMul(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
	if rows == 0 || n == 0 {
		return
	}
	nb, groups := k/quant.QK_K, rows/Q4KR16Rows
	act := nb * Q4KR16ActBytes
	if groups > 0 {
		j := 0
		for ; j+4 <= n; j += 4 {
			q4kr16DotM4(&w[0], &xr[j*act], act, &dst[j*ldd], ldd, nb, groups)
		}
		for ; j < n; j++ {
			q4kr16Dot(&w[0], &xr[j*act], &dst[j*ldd], nb, groups)
		}
	}
	if full := groups * Q4KR16Rows; full < rows {
		var tail [Q4KR16Rows]float32
		g := w[groups*nb*Q4KR16Bytes:]
		for j := range n {
			q4kr16Dot(&g[0], &xr[j*act], &tail[0], nb, 1)
			copy(dst[j*ldd+full:j*ldd+rows], tail[:])
		}
	}
}

// q4kr16Batch is Q4KR16MatMul as a ledger kernel over Q4KR16Layout.
var q4kr16Batch ledger.MatMul = Q4KR16MatMul
