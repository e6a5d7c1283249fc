//go:build amd64 && !noasm

package avx512

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/kernelbench"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	// The bf16 and f16 batched attentions are checked against naive-bf16
	// and naive-f16, the same roundings in scalar Go.
	_ "github.com/damascus-llm/damascus/variants/naive"
)

// TestConformance runs every variant this package registers (matvec,
// quantize, dequantize, the row ops, attention in all its forms) through
// the ledger's conformance suite; a variant needing a feature this
// machine lacks is a logged skip.
func TestConformance(t *testing.T) { ledgertest.Run(t) }

// Sweeps of this package's variants; DAMASCUS_BENCH_SHAPES picks the shapes.
func BenchmarkMatVec(b *testing.B)     { kernelbench.Run(b, ledger.KindMatVec) }
func BenchmarkQuantize(b *testing.B)   { kernelbench.Run(b, ledger.KindQuantize) }
func BenchmarkDequantize(b *testing.B) { kernelbench.Run(b, ledger.KindDequantize) }
func BenchmarkRMSNorm(b *testing.B)    { kernelbench.Run(b, ledger.KindRMSNorm) }
func BenchmarkSiLUMul(b *testing.B)    { kernelbench.Run(b, ledger.KindSiLUMul) }
func BenchmarkSoftmax(b *testing.B)    { kernelbench.Run(b, ledger.KindSoftmax) }
func BenchmarkRoPE(b *testing.B)       { kernelbench.Run(b, ledger.KindRoPE) }
