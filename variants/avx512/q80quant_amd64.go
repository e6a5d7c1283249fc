//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func q80QuantizeAVX512(dst *byte, x *float32, nb int)

// QuantizeQ8_0 writes x (a multiple of 32 values) as Q8_0 blocks, byte for
// byte as ggml's quantize_row_q8_0_ref for input without NaNs.
func QuantizeQ8_0(dst []byte, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		q80QuantizeAVX512(&dst[0], &x[0], nb)
	}
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.QuantizeOp(quant.Q8_0), Name: "avx512", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512bw", "avx512vl", "f16c"}, Impl: ledger.Quantize(QuantizeQ8_0),
		Notes: "one block per step; VCVTPS2PH for d, exact roundf by truncate-and-correct; byte-identical to ggml's ref"})
}
