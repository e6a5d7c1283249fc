package naive_test

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/variants/naive"
)

func TestAttentionBatch(t *testing.T) { ledgertest.AttentionBatch(t, naive.AttentionBatch) }

// TestAttentionBatchBF16Harness runs the bf16 harness on the reference
// itself: it must find no difference.
func TestAttentionBatchBF16Harness(t *testing.T) {
	ledgertest.AttentionBatchBF16(t, naive.AttentionBatchBF16, naive.AttentionBatchBF16)
}

func TestAttentionBatchF16Harness(t *testing.T) {
	ledgertest.AttentionBatchF16(t, naive.AttentionBatchF16, naive.AttentionBatchF16)
}
