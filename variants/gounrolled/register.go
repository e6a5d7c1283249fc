package gounrolled

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

func init() {
	const notes = "pure Go, inner loops unrolled with independent accumulators, bounds checks hoisted"
	for wt, f := range map[quant.Type]ledger.MatVec{
		quant.Q4_K: MatVecQ4K, quant.Q6_K: MatVecQ6K, quant.Q8_0: MatVecQ8_0,
		quant.F32: MatVecF32, quant.F16: MatVecF16, quant.BF16: MatVecBF16,
	} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(wt), Name: "go-unrolled", Family: ledger.FamilyGoUnrolled,
			Impl: f, Notes: notes})
	}
	for wt, f := range map[quant.Type]ledger.MatMul{quant.Q4_K: MatVecBatchQ4K, quant.Q6_K: MatVecBatchQ6K} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(wt), Name: "go-unrolled", Family: ledger.FamilyGoUnrolled,
			Impl: f, Notes: "pure Go: each super-block of a weight row unpacked once (quants to int32 in value order, scales, d), " +
				"then dotted with every token's activations; integer sums per sub-block, the float epilogue per super-block and token"})
	}
	for t, f := range map[quant.Type]ledger.Quantize{quant.Q8_K: QuantizeQ8K, quant.Q8_0: QuantizeQ8_0} {
		ledger.Register(ledger.Variant{Op: ledger.QuantizeOp(t), Name: "go-unrolled", Family: ledger.FamilyGoUnrolled,
			Impl: f, Notes: "pure Go, byte-identical to ggml's quantize_row_*_ref (checked against the pinned libggml-base)"})
	}
	for op, impl := range map[string]any{
		ledger.OpRMSNorm: ledger.RMSNorm(RMSNorm),
		ledger.OpSiLUMul: ledger.SiLUMul(SiLUMul),
		ledger.OpSoftmax: ledger.Softmax(Softmax),
		ledger.OpRoPE:    ledger.RoPE(RoPE),
	} {
		ledger.Register(ledger.Variant{Op: op, Name: "go-unrolled", Family: ledger.FamilyGoUnrolled, Impl: impl,
			Notes: "pure Go, float64 sums where ggml keeps them"})
	}
}
