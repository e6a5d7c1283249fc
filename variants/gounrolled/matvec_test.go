package gounrolled_test

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/kernelbench"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	_ "github.com/damascus-llm/damascus/variants/gounrolled"
)

// TestConformance runs every variant this package registers through the
// ledger's conformance suite: the gate (with ggml's kernels where it has
// the op), misaligned inputs, and the deeper checks of each op kind (for
// matvec: every mode of adversarial block, tail lengths, guards and the
// ggml vec_dot cross-check).
func TestConformance(t *testing.T) { ledgertest.Run(t) }

// Sweeps of this package's variants; DAMASCUS_BENCH_SHAPES picks the shapes.
func BenchmarkMatVec(b *testing.B)   { kernelbench.Run(b, ledger.KindMatVec) }
func BenchmarkQuantize(b *testing.B) { kernelbench.Run(b, ledger.KindQuantize) }
func BenchmarkRMSNorm(b *testing.B)  { kernelbench.Run(b, ledger.KindRMSNorm) }
func BenchmarkSiLUMul(b *testing.B)  { kernelbench.Run(b, ledger.KindSiLUMul) }
func BenchmarkSoftmax(b *testing.B)  { kernelbench.Run(b, ledger.KindSoftmax) }
func BenchmarkRoPE(b *testing.B)     { kernelbench.Run(b, ledger.KindRoPE) }
