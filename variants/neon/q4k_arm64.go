//go:build !noasm

package neon

import "github.com/damascus-llm/damascus/variants/internal/rowops"

//go:noescape
func q4kRowsNEON(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ4K computes dst[r] = W[r]·x for Q4_K weights and Q8_K activations
// with SDOT.
func MatVecQ4K(dst []float32, w, xq []byte, k int) {
	rowops.Blocks(q4kRowsNEON, 256, dst, w, xq, k)
}
