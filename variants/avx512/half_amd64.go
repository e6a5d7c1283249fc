//go:build !noasm

package avx512

import (
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func dequantizeF16(dst *float32, src *byte, n int)

//go:noescape
func dequantizeBF16(dst *float32, src *byte, n int)

// DequantizeF16 widens little-endian IEEE halves to float32 (exact;
// ledger.Dequantize's contract), sixteen at a time with VCVTPH2PS.
func DequantizeF16(dst []float32, src []byte) { widen(dequantizeF16, quant.F16, dst, src) }

// DequantizeBF16 widens little-endian bfloat16 values to float32 (exact),
// sixteen at a time by a zero extension and a shift.
func DequantizeBF16(dst []float32, src []byte) { widen(dequantizeBF16, quant.BF16, dst, src) }

func widen(kernel func(*float32, *byte, int), t quant.Type, dst []float32, src []byte) {
	if len(src) < 2*len(dst) {
		panic(fmt.Sprintf("avx512 dequantize %s: %d bytes for %d values", t, len(src), len(dst)))
	}
	if len(dst) > 0 {
		kernel(&dst[0], &src[0], len(dst))
	}
}

func init() {
	for _, v := range []struct {
		t    quant.Type
		impl ledger.Dequantize
		how  string
	}{{quant.F16, DequantizeF16, "VCVTPH2PS"}, {quant.BF16, DequantizeBF16, "VPMOVZXWD and a 16-bit shift"}} {
		ledger.Register(ledger.Variant{Op: ledger.DequantizeOp(v.t), Name: "avx512", Family: ledger.FamilyAVX512,
			Features: []string{"avx512f", "avx512bw", "avx512vl"}, Impl: v.impl,
			Notes: "16 values a step by " + v.how + ", the last step masked: widens a 16-bit KV cache's rows for attention"})
	}
}
