package naive_test

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
	_ "github.com/damascus-llm/damascus/variants/naive"
)

// TestConformance runs every variant this package registers through the
// ledger's conformance suite. naive-bf16 and naive-f16 are checked by the
// 16-bit batched attention harness against themselves, which must find no
// difference.
func TestConformance(t *testing.T) { ledgertest.Run(t) }
