//go:build !noasm

package avx2

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func q4kRowsAVX2(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q5kRowsAVX2(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q6kRowsAVX2(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q80RowsAVX2(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q40RowsAVX2(dst *float32, rows int, w, xq *byte, nb int)

// Matrix-vector products: Q4_K and Q6_K weights with Q8_K activations, Q8_0
// with Q8_0 (activations must not hold -128, as ggml's quantizer ensures).
var (
	MatVecQ4K  = rowops.BlockMatVec(q4kRowsAVX2, 256)
	MatVecQ5K  = rowops.BlockMatVec(q5kRowsAVX2, 256)
	MatVecQ6K  = rowops.BlockMatVec(q6kRowsAVX2, 256)
	MatVecQ8_0 = rowops.BlockMatVec(q80RowsAVX2, 32)
	MatVecQ4_0 = rowops.BlockMatVec(q40RowsAVX2, 32)
)

func init() {
	ledger.RegisterMatVecs("avx2", ledger.FamilyAVX2, []string{"avx2", "fma", "f16c"},
		ledger.MatVecImpl{Weights: quant.Q4_K, Impl: MatVecQ4K, Notes: "one row at a time; a 32-byte quant load is a whole 64-value chunk, so activations load straight; VPSHUFB-broadcast scale words into VPMADDWD"},
		ledger.MatVecImpl{Weights: quant.Q5_K, Impl: MatVecQ5K, Notes: "Q4_K's kernel with each 32-value chunk's fifth bits (qh) shifted to bit 4 by a word shift, masked per byte and or-ed into the nibbles"},
		ledger.MatVecImpl{Weights: quant.Q6_K, Impl: MatVecQ6K, Notes: "one row at a time; unsigned 6-bit quants, VPMADDUBSW + VPMADDWD by per-lane scale words; -32 offset from bsums"},
		ledger.MatVecImpl{Weights: quant.Q8_0, Impl: MatVecQ8_0, Notes: "one row, one block at a time; VPSIGNB sign trick into VPMADDUBSW + VPMADDWD"},
		ledger.MatVecImpl{Weights: quant.Q4_0, Impl: MatVecQ4_0, Notes: "Q8_0's kernel on the nibbles less 8 (low nibbles in the low lane, high in the high), as ggml's AVX2 Q4_0 dot"})
}
