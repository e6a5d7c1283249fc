//go:build !noasm

package amx

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

// TestConformance runs every variant this package registers through the
// ledger's conformance suite (the tile programs' own tests above go deeper
// into their blocking); AMX variants are logged skips on a machine without
// AMX or without the OS's permission to use it.
func TestConformance(t *testing.T) { ledgertest.Run(t) }
