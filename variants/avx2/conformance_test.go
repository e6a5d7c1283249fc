//go:build amd64 && !noasm

package avx2

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
	_ "github.com/damascus-llm/damascus/variants/naive" // the 16-bit caches' reference attention
)

// TestConformance runs every variant this package registers (matvec and
// the row ops) through the ledger's conformance suite; a variant needing a
// feature this machine lacks is a logged skip.
func TestConformance(t *testing.T) { ledgertest.Run(t) }
