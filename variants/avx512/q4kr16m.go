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
	Q4KR16MatMulRB(dst, ldd, w, rows, xr, n, k, 0)
}

// Q4KR16MatMulRB is Q4KR16MatMul over blocks of rows of about rbBytes of
// weights (0: all rows at once): each block's tokens before the next, so a
// block read from memory once serves every token from L1 or L2 instead of
// every four tokens streaming the whole matrix again. The same results
// bit for bit.
func Q4KR16MatMulRB(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k, rbBytes int) {
	r16MatMul(dst, ldd, w, rows, xr, n, k, rbBytes, Q4KR16Bytes, Q4KR16ActBytes, q4kr16DotM4,
		func(w, x *byte, dst *float32, nb, groups int) { q4kr16Dot(w, x, dst, nb, groups) })
}

// Q6KR16MatMul is Q4KR16MatMul for the interleaved Q6_K layout
// (activations laid out by PrepareQ6KR16; each token's results are
// Q6KR16MatVec's without prefetch).
func Q6KR16MatMul(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
	Q6KR16MatMulRB(dst, ldd, w, rows, xr, n, k, 0)
}

// Q6KR16MatMulRB is Q4KR16MatMulRB for the interleaved Q6_K layout.
func Q6KR16MatMulRB(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k, rbBytes int) {
	r16MatMul(dst, ldd, w, rows, xr, n, k, rbBytes, Q6KR16Bytes, Q6KR16ActBytes, q6kr16DotM4,
		func(w, x *byte, dst *float32, nb, groups int) { q6kr16Dot(w, x, dst, nb, groups, 0) })
}

// r16MatMul runs a four-token kernel (m4) and a one-token kernel (one)
// over an interleaved layout of groupBytes a group and super-block,
// actBytes of activations a super-block: four tokens at a time, the rest
// one at a time, block by block of the groups (rbBytes of weights a block;
// 0: one block), a last partial group through a 16-value buffer.
func r16MatMul(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k, rbBytes, groupBytes, actBytes int,
	m4 r16Multi, one func(w, x *byte, dst *float32, nb, groups int)) {
	r16MatMulWidths(dst, ldd, w, rows, xr, n, k, rbBytes, groupBytes, actBytes, []r16Width{
		{4, m4},
		{1, func(w, x *byte, _ int, dst *float32, _, nb, groups int) { one(w, x, dst, nb, groups) }},
	})
}

// r16Multi is a kernel over groups of 16 interleaved rows (nb super-blocks
// each) for a fixed number of tokens: their activations at x, xstride
// bytes apart; token t's 16 sums of each group at dst + t·ldd floats.
type r16Multi func(w, x *byte, xstride int, dst *float32, ldd, nb, groups int)

// r16Width is a kernel and the tokens it takes a pass.
type r16Width struct {
	tokens int
	f      r16Multi
}

// r16MatMulWidths runs kernels (widest first, the last one token wide)
// over an interleaved layout of groupBytes a group and super-block,
// actBytes of activations a super-block: as many tokens at a time as the
// widest that fits, block by block of the groups (rbBytes of weights a
// block; 0: one block), a last partial group through a 16-value buffer.
func r16MatMulWidths(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k, rbBytes, groupBytes, actBytes int, kernels []r16Width) {
	if rows == 0 || n == 0 {
		return
	}
	nb, groups := k/quant.QK_K, rows/Q4KR16Rows
	act, gbytes := nb*actBytes, nb*groupBytes
	block := groups
	if rbBytes > 0 {
		block = max(1, rbBytes/gbytes)
	}
	for g0 := 0; g0 < groups; g0 += block {
		ng, wg, d0 := min(block, groups-g0), w[g0*gbytes:], g0*Q4KR16Rows
		j := 0
		for _, kn := range kernels {
			for ; j+kn.tokens <= n; j += kn.tokens {
				kn.f(&wg[0], &xr[j*act], act, &dst[j*ldd+d0], ldd, nb, ng)
			}
		}
	}
	if full := groups * Q4KR16Rows; full < rows {
		var tail [Q4KR16Rows]float32
		g, one := w[groups*gbytes:], kernels[len(kernels)-1].f
		for j := range n {
			one(&g[0], &xr[j*act], act, &tail[0], Q4KR16Rows, nb, 1)
			copy(dst[j*ldd+full:j*ldd+rows], tail[:])
		}
	}
}

// Q4KR16MatMulF is the batched decode product over the interleaved Q4_K
// layout with the rows' scales applied in float (q4kr16f_amd64.s): eight
// tokens a pass, then four, then one, each token's float operations the
// same in every width, so its results do not depend on the others. Not
// the bits of Q4KR16MatVec (that sums the scaled products in integers).
func Q4KR16MatMulF(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
	r16MatMulWidths(dst, ldd, w, rows, xr, n, k, 0, Q4KR16Bytes, Q4KR16ActBytes, []r16Width{{8, q4kr16F8}, {4, q4kr16F4}, {1, q4kr16F1}})
}

// Q6KR16MatMulF is Q4KR16MatMulF for the interleaved Q6_K layout
// (activations laid out by PrepareQ6KR16).
func Q6KR16MatMulF(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
	r16MatMulWidths(dst, ldd, w, rows, xr, n, k, 0, Q6KR16Bytes, Q6KR16ActBytes, []r16Width{{8, q6kr16F8}, {4, q6kr16F4}, {1, q6kr16F1}})
}

// q4kr16Batch and q6kr16Batch are the ledger kernels over Q4KR16Layout
// and Q6KR16Layout.
var (
	q4kr16Batch ledger.MatMul = Q4KR16MatMul
	q6kr16Batch ledger.MatMul = Q6KR16MatMul
)
