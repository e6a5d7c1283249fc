package gounrolled_test

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/kernelbench"
)

// Sweeps of this package's variants (gated first); DAMASCUS_BENCH_SHAPES
// picks the shapes. BenchmarkOps times the row ops.
func BenchmarkMatVec(b *testing.B)   { kernelbench.Run(b, ledger.KindMatVec) }
func BenchmarkQuantize(b *testing.B) { kernelbench.Run(b, ledger.KindQuantize) }
func BenchmarkOps(b *testing.B) {
	kernelbench.Run(b, ledger.KindRMSNorm, ledger.KindSiLUMul, ledger.KindSoftmax, ledger.KindRoPE)
}
