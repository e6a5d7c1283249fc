package naive_test

import (
	"testing"

	"github.com/damascus-llm/damascus/variants/gounrolled/kerneltest"
	"github.com/damascus-llm/damascus/variants/naive"
)

func TestAttentionBatch(t *testing.T) { kerneltest.AttentionBatch(t, naive.AttentionBatch) }
