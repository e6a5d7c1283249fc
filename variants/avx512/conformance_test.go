//go:build amd64 && !noasm

package avx512

import (
	"testing"

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
