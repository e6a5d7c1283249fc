//go:build !noasm

package neon

import "github.com/damascus-llm/damascus/variants/internal/rowops"

//go:noescape
func q6kRowsNEON(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ6K computes dst[r] = W[r]·x for Q6_K weights and Q8_K activations
// with SDOT.
func MatVecQ6K(dst []float32, w, xq []byte, k int) {
	rowops.Blocks(q6kRowsNEON, 256, dst, w, xq, k)
}
