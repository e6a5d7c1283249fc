//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func q8kQuantizeAVX512(dst *byte, x *float32, nb int)

// QuantizeQ8K writes x (a multiple of 256 values) as Q8_K blocks, byte for
// byte as ggml's quantize_row_q8_K_ref for input without NaNs (an all-zero block
// gets zero bsums, which ggml leaves unwritten).
func QuantizeQ8K(dst []byte, x []float32) {
	if nb := len(x) / 256; nb > 0 {
		q8kQuantizeAVX512(&dst[0], &x[0], nb)
	}
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.QuantizeOp(quant.Q8_K), Name: "avx512", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512bw", "avx512vl"}, Impl: ledger.Quantize(QuantizeQ8K),
		Notes: "VMAXPS tree, first-max search by VCMPPS, VCVTPS2DQ rounding (= nearest_int), bsums by VPSADBW; byte-identical to ggml's ref"})
}
