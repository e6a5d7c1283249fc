//go:build !noasm

package neon

import "github.com/damascus-llm/damascus/variants/internal/rowops"

//go:noescape
func q80RowsNEON(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ8_0 computes dst[r] = W[r]·x for Q8_0 weights and activations with
// SDOT.
func MatVecQ8_0(dst []float32, w, xq []byte, k int) {
	rowops.Blocks(q80RowsNEON, 32, dst, w, xq, k)
}
