//go:build !noasm

package avx2

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func q80QuantizeAVX2(dst *byte, x *float32, nb int)

//go:noescape
func q8kQuantizeAVX2(dst *byte, x *float32, nb int)

// QuantizeQ8_0 writes x (whole blocks of 32 values; a partial last block is
// left alone, as the other quantizers do) as Q8_0 blocks, byte for byte as
// ggml's quantize_row_q8_0_ref for input without NaNs. Where AVX-512 is
// absent the activations of every Q8_0 and Q4_0 product used to be
// quantized in Go (7 % of a 1B Q8_0 pp512 with AVX-512 hidden).
func QuantizeQ8_0(dst []byte, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		_ = dst[nb*34-1]
		q80QuantizeAVX2(&dst[0], &x[0], nb)
	}
}

// QuantizeQ8K writes x (whole blocks of 256 values, as QuantizeQ8_0) as
// Q8_K blocks, byte for byte as ggml's quantize_row_q8_K_ref for input
// without NaNs (an all-zero block gets zero bsums, which ggml leaves
// unwritten). It quantizes the K-quants' activations where AVX-512 is absent.
func QuantizeQ8K(dst []byte, x []float32) {
	if nb := len(x) / 256; nb > 0 {
		_ = dst[nb*292-1]
		q8kQuantizeAVX2(&dst[0], &x[0], nb)
	}
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.QuantizeOp(quant.Q8_K), Name: "avx2", Family: ledger.FamilyAVX2,
		Features: []string{"avx2"}, Impl: ledger.Quantize(QuantizeQ8K),
		Notes: "a block read three times from L1: VMAXPS tree for amax, first-max search by VCMPPS, VDIVSS for iscale and d, " +
			"ggml's nearest_int by the 1.5·2^23 add, low bytes by a mask, two packs and a VPERMD, bsums by VPSADBW and two VPHADDDs; " +
			"byte-identical to ggml's ref (avx512's arithmetic at half the width)"})
	ledger.Register(ledger.Variant{Op: ledger.QuantizeOp(quant.Q8_0), Name: "avx2", Family: ledger.FamilyAVX2,
		Features: []string{"avx2", "f16c"}, Impl: ledger.Quantize(QuantizeQ8_0),
		Notes: "four 8-lane vectors a block: VMAXPS tree for amax, VDIVSS and VCVTPS2PH for d, roundf(x·id) by truncate-and-correct, " +
			"low bytes by a mask, two packs and a VPERMD; byte-identical to ggml's ref (avx512's arithmetic at half the width)"})
}
