package naive_test

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/kernelbench"
	_ "github.com/damascus-llm/damascus/variants/naive"
)

// Sweeps of this package's variants; DAMASCUS_BENCH_SHAPES picks the shapes.
func BenchmarkMatVec(b *testing.B)         { kernelbench.Run(b, ledger.KindMatVec) }
func BenchmarkMatMul(b *testing.B)         { kernelbench.Run(b, ledger.KindMatMul) }
func BenchmarkQuantize(b *testing.B)       { kernelbench.Run(b, ledger.KindQuantize) }
func BenchmarkDequantize(b *testing.B)     { kernelbench.Run(b, ledger.KindDequantize) }
func BenchmarkRMSNorm(b *testing.B)        { kernelbench.Run(b, ledger.KindRMSNorm) }
func BenchmarkSiLUMul(b *testing.B)        { kernelbench.Run(b, ledger.KindSiLUMul) }
func BenchmarkSoftmax(b *testing.B)        { kernelbench.Run(b, ledger.KindSoftmax) }
func BenchmarkRoPE(b *testing.B)           { kernelbench.Run(b, ledger.KindRoPE) }
func BenchmarkAttention(b *testing.B)      { kernelbench.Run(b, ledger.KindAttention) }
func BenchmarkAttentionBatch(b *testing.B) { kernelbench.Run(b, ledger.KindAttentionBatch) }
