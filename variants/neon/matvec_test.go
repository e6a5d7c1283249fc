//go:build arm64 && !noasm

package neon

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/kernelbench"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

// TestConformance runs every variant this package registers through the
// ledger's conformance suite; the SDOT kernels are logged skips on a core
// without asimddp.
func TestConformance(t *testing.T) { ledgertest.Run(t) }

// Sweeps of this package's variants; DAMASCUS_BENCH_SHAPES picks the shapes.
func BenchmarkMatVec(b *testing.B) { kernelbench.Run(b, ledger.KindMatVec) }
