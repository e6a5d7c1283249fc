//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func q80RowsAVX512(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q80RowsVNNI(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ8_0 computes dst[r] = W[r]·x for Q8_0 weights and Q8_0 activations
// with AVX-512BW. Activations must not hold -128 (ggml's quantizer never
// writes it); weights may.
func MatVecQ8_0(dst []float32, w, xq []byte, k int) {
	rowops.Blocks(q80RowsAVX512, 32, dst, w, xq, k)
}

// MatVecQ8_0VNNI is MatVecQ8_0 with the byte products summed by
// AVX512-VNNI's VPDPBUSD.
func MatVecQ8_0VNNI(dst []float32, w, xq []byte, k int) {
	rowops.Blocks(q80RowsVNNI, 32, dst, w, xq, k)
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q8_0), Name: "avx512", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512bw", "avx512vl", "f16c"}, Impl: ledger.MatVec(MatVecQ8_0),
		Notes: "one row at a time, two blocks per vector; sign trick (|w|, x·sign w) into VPMADDUBSW + VPMADDWD"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q8_0), Name: "avx512-vnni", Family: ledger.FamilyAVX512VNNI,
		Features: []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"}, Impl: ledger.MatVec(MatVecQ8_0VNNI),
		Notes: "as avx512, with VPDPBUSD for the byte products"})
}
