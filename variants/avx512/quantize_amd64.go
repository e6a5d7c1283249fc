//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func q80QuantizeAVX512(dst *byte, x *float32, nb int)

//go:noescape
func q8kQuantizeAVX512(dst *byte, x *float32, nb int)

// QuantizeQ8_0 writes x (a multiple of 32 values) as Q8_0 blocks, byte for
// byte as ggml's quantize_row_q8_0_ref for input without NaNs.
//
// QuantizeQ8K writes x (a multiple of 256 values) as Q8_K blocks, byte for
// byte as ggml's quantize_row_q8_K_ref for input without NaNs (an all-zero
// block gets zero bsums, which ggml leaves unwritten).
var (
	QuantizeQ8_0 = blockQuantize(q80QuantizeAVX512, 32)
	QuantizeQ8K  = blockQuantize(q8kQuantizeAVX512, 256)
)

// blockQuantize returns the Quantize that runs kernel over the whole blocks
// of blockValues values in x (none when x holds less than one block).
func blockQuantize(kernel func(dst *byte, x *float32, nb int), blockValues int) ledger.Quantize {
	return func(dst []byte, x []float32) {
		if nb := len(x) / blockValues; nb > 0 {
			kernel(&dst[0], &x[0], nb)
		}
	}
}

func init() {
	for _, v := range []struct {
		t        quant.Type
		impl     ledger.Quantize
		features []string
		notes    string
	}{
		{quant.Q8_0, QuantizeQ8_0, []string{"avx512f", "avx512bw", "avx512vl", "f16c"},
			"one block per step; VCVTPS2PH for d, exact roundf by truncate-and-correct; byte-identical to ggml's ref"},
		{quant.Q8_K, QuantizeQ8K, []string{"avx512f", "avx512bw", "avx512vl"},
			"VMAXPS tree, first-max search by VCMPPS, VCVTPS2DQ rounding (= nearest_int), bsums by VPSADBW; byte-identical to ggml's ref"},
	} {
		ledger.Register(ledger.Variant{Op: ledger.QuantizeOp(v.t), Name: "avx512", Family: ledger.FamilyAVX512,
			Features: v.features, Impl: v.impl, Notes: v.notes})
	}
}
