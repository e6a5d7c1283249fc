//go:build amd64 && !noasm

package avx512

import (
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

// need skips t unless this machine (CPU and OS) has every named feature.
func need(t testing.TB, features ...string) {
	t.Helper()
	if missing := cpufeat.Missing(features...); len(missing) > 0 {
		t.Skipf("machine lacks %s", strings.Join(missing, ", "))
	}
}
