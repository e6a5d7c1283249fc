//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func q80RowsAVX512(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q80RowsVNNI(dst *float32, rows int, w, xq *byte, nb int)

var (
	// MatVecQ8_0 computes dst[r] = W[r]·x for Q8_0 weights and Q8_0
	// activations with AVX-512BW. Activations must not hold -128 (ggml's
	// quantizer never writes it); weights may.
	MatVecQ8_0 = rowops.BlockMatVec(q80RowsAVX512, 32)
	// MatVecQ8_0VNNI is MatVecQ8_0 with the byte products summed by
	// AVX512-VNNI's VPDPBUSD.
	MatVecQ8_0VNNI = rowops.BlockMatVec(q80RowsVNNI, 32)
)

func init() {
	registerMatVec(quant.Q8_0, "avx512", MatVecQ8_0,
		"one row at a time, two blocks per vector; sign trick (|w|, x·sign w) into VPMADDUBSW + VPMADDWD")
	registerMatVec(quant.Q8_0, "avx512-vnni", MatVecQ8_0VNNI,
		"as avx512, with VPDPBUSD for the byte products")
}
