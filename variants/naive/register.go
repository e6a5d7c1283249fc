package naive

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

func init() {
	for _, wt := range ledger.WeightTypes {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(wt), Name: "naive", Family: ledger.FamilyNaive,
			Impl:  MatVec(wt),
			Notes: "scalar Go, one row at a time; integer block sums as in ggml's vec_dot generic"})
		ledger.Register(ledger.Variant{Op: ledger.MatMulOp(wt), Name: "naive", Family: ledger.FamilyNaive,
			Impl:  MatMul(wt),
			Notes: "scalar Go, one dot product per output"})
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(wt), Name: "naive", Family: ledger.FamilyNaive,
			Impl:  MatMul(wt),
			Notes: "scalar Go, one dot product per output (each token's alone, so independent of the others)"})
	}
	quantizers := map[quant.Type]ledger.Quantize{
		quant.Q8_K: QuantizeQ8K, quant.Q8_0: QuantizeQ8_0, quant.F16: QuantizeF16, quant.BF16: QuantizeBF16,
	}
	for _, t := range ledger.ActivationTypes {
		ledger.Register(ledger.Variant{Op: ledger.QuantizeOp(t), Name: "naive", Family: ledger.FamilyNaive,
			Impl:  quantizers[t],
			Notes: "scalar Go, byte-identical to ggml's quantize_row_*_ref"})
	}
	dequantizers := map[quant.Type]ledger.Dequantize{
		quant.Q4_K: quant.DequantizeQ4K, quant.Q5_K: quant.DequantizeQ5K, quant.Q6_K: quant.DequantizeQ6K, quant.Q8_0: quant.DequantizeQ8_0,
		quant.Q4_0: quant.DequantizeQ4_0, quant.Q8_K: quant.DequantizeQ8K, quant.F16: quant.DequantizeF16,
		quant.BF16: quant.DequantizeBF16,
	}
	for _, t := range ledger.DequantizeTypes {
		ledger.Register(ledger.Variant{Op: ledger.DequantizeOp(t), Name: "naive", Family: ledger.FamilyNaive,
			Impl:  dequantizers[t],
			Notes: "quant's scalar dequantizer (bit-identical to ggml's dequantize_row_*)"})
	}
	for op, impl := range map[string]any{
		ledger.OpRMSNorm:        ledger.RMSNorm(RMSNorm),
		ledger.OpSiLUMul:        ledger.SiLUMul(SiLUMul),
		ledger.OpSoftmax:        ledger.Softmax(Softmax),
		ledger.OpRoPE:           ledger.RoPE(RoPE),
		ledger.OpAttention:      ledger.Attention(Attention),
		ledger.OpAttentionBatch: ledger.AttentionBatch(AttentionBatch),
	} {
		ledger.Register(ledger.Variant{Op: op, Name: "naive", Family: ledger.FamilyNaive,
			Impl: impl, Notes: "scalar Go"})
	}
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "naive-bf16", Family: ledger.FamilyNaive,
		Precision: ledger.PrecisionBF16, Impl: ledger.AttentionBatch(AttentionBatchBF16),
		Notes: "scalar Go with the roundings of llama.cpp's graph over a bf16 KV cache: queries and probabilities rounded to bf16, " +
			"scores and softmax in float32; the engine's attention for a BF16 cache where no faster bf16 variant runs"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "naive-f16", Family: ledger.FamilyNaive,
		Precision: ledger.PrecisionF16, Impl: ledger.AttentionBatch(AttentionBatchF16),
		Notes: "naive-bf16 for an F16 cache: queries and probabilities rounded to IEEE half"})
	for _, t := range []quant.Type{quant.F16, quant.BF16} {
		ledger.Register(ledger.Variant{Op: ledger.AttentionHalfOp(t), Name: "naive", Family: ledger.FamilyNaive,
			Impl: AttentionHalf(t), Notes: "the cache widened whole, then naive-" + ledger.TypeName(t) + "'s loop for the one token"})
	}
}
