package gounrolled_test

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
	_ "github.com/damascus-llm/damascus/variants/gounrolled"
)

// TestConformance runs every variant this package registers through the
// ledger's conformance suite: the gate (with ggml's kernels where it has
// the op), misaligned inputs, and the deeper checks of each op kind (for
// matvec: every mode of adversarial block, tail lengths, guards and the
// ggml vec_dot cross-check).
func TestConformance(t *testing.T) { ledgertest.Run(t) }
