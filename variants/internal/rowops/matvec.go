package rowops

import "github.com/damascus-llm/damascus/ledger"

// A RowsKernel is the shape of the matrix-vector assembly kernels: rows
// weight rows of n units each (blocks of a quantized type, or plain values)
// dotted with xq, written to dst[0:rows].
type RowsKernel func(dst *float32, rows int, w, xq *byte, n int)

// Blocks runs kernel, over blocks of blockValues values, for
// dst[r] = W[r]·x with k values a row; it clears dst when there is no whole
// block to multiply (k < blockValues).
func Blocks(kernel RowsKernel, blockValues int, dst []float32, w, xq []byte, k int) {
	if len(dst) == 0 || k < blockValues {
		clear(dst)
		return
	}
	kernel(&dst[0], len(dst), &w[0], &xq[0], k/blockValues)
}

// BlockMatVec is Blocks as a ledger.MatVec.
func BlockMatVec(kernel RowsKernel, blockValues int) ledger.MatVec {
	return func(dst []float32, w, xq []byte, k int) { Blocks(kernel, blockValues, dst, w, xq, k) }
}

// Floats runs kernel, over k plain values a row, for dst[r] = W[r]·x; it
// clears dst when k is 0.
func Floats(kernel RowsKernel, dst []float32, w, xq []byte, k int) {
	if len(dst) == 0 {
		return
	}
	if k == 0 {
		clear(dst)
		return
	}
	kernel(&dst[0], len(dst), &w[0], &xq[0], k)
}

// FloatMatVec is Floats as a ledger.MatVec.
func FloatMatVec(kernel RowsKernel) ledger.MatVec {
	return func(dst []float32, w, xq []byte, k int) { Floats(kernel, dst, w, xq, k) }
}
