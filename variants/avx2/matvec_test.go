//go:build amd64 && !noasm

package avx2

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/kernelbench"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

// TestConformance runs every variant this package registers (matvec and
// the row ops) through the ledger's conformance suite; a variant needing a
// feature this machine lacks is a logged skip.
func TestConformance(t *testing.T) { ledgertest.Run(t) }

// Sweeps of this package's variants; DAMASCUS_BENCH_SHAPES picks the shapes.
func BenchmarkMatVec(b *testing.B)  { kernelbench.Run(b, ledger.KindMatVec) }
func BenchmarkRMSNorm(b *testing.B) { kernelbench.Run(b, ledger.KindRMSNorm) }
func BenchmarkSiLUMul(b *testing.B) { kernelbench.Run(b, ledger.KindSiLUMul) }
func BenchmarkSoftmax(b *testing.B) { kernelbench.Run(b, ledger.KindSoftmax) }
func BenchmarkRoPE(b *testing.B)    { kernelbench.Run(b, ledger.KindRoPE) }
