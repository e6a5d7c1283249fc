package naive_test

import (
	"testing"

	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
	"github.com/damascus-llm/damascus/variants/naive"
)

func TestAttentionBatch(t *testing.T) { kerneltest.AttentionBatch(t, naive.AttentionBatch) }

// TestAttentionBatchBF16Harness runs the bf16 harness on the reference
// itself: it must find no difference.
func TestAttentionBatchBF16Harness(t *testing.T) {
	kerneltest.AttentionBatchBF16(t, naive.AttentionBatchBF16, naive.AttentionBatchBF16)
}

func TestAttentionBatchF16Harness(t *testing.T) {
	kerneltest.AttentionBatchF16(t, naive.AttentionBatchF16, naive.AttentionBatchF16)
}
