package cpufeat

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseHideFollowsPrerequisites(t *testing.T) {
	for _, c := range []struct {
		in       string
		hides    []string
		notHides []string
	}{
		{"", nil, []string{"avx", "avx2", "avx512f", "amx-int8"}},
		{"amx-tile", []string{"amx-tile", "amx-int8", "amx-bf16", "amx-fp16"}, []string{"avx512f", "avx512vnni", "avx2"}},
		{"AMX_INT8", []string{"amx-int8"}, []string{"amx-tile", "amx-bf16", "avx512f"}},
		{"avx512f", []string{"avx512f", "avx512bw", "avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi", "amx-tile", "amx-int8", "amx-bf16"}, []string{"avx2", "fma", "avx-vnni", "bmi2"}},
		{" avx2 , amx-bf16", []string{"avx2", "avx-vnni", "avx512f", "amx-int8"}, []string{"avx", "fma", "f16c", "bmi2"}},
		{"asimd", []string{"asimd", "asimddp", "i8mm", "sve"}, []string{"avx2"}},
	} {
		got, err := parseHide(c.in)
		if err != nil {
			t.Fatalf("parseHide(%q): %v", c.in, err)
		}
		for _, n := range c.hides {
			if !got[n] {
				t.Errorf("parseHide(%q) leaves %s visible", c.in, n)
			}
		}
		for _, n := range c.notHides {
			if got[n] {
				t.Errorf("parseHide(%q) hides %s", c.in, n)
			}
		}
	}
}

func TestParseHideRejectsUnknownNames(t *testing.T) {
	for _, in := range []string{"avx9000", "avx2,avx-512", "amx"} {
		if _, err := parseHide(in); err == nil || !strings.Contains(err.Error(), HideEnv) {
			t.Errorf("parseHide(%q) = %v, want an error naming %s", in, err, HideEnv)
		}
	}
}

// In a process started with $DAMASCUS_CPU_HIDE (the CI's fallback leg),
// every hidden feature reads as absent and the others as detected.
func TestHiddenFeaturesReadAbsent(t *testing.T) {
	want, err := parseHide(os.Getenv(HideEnv))
	if err != nil {
		if HideError() == nil {
			t.Fatalf("$%s is malformed (%v) but HideError() is nil", HideEnv, err)
		}
		t.Skipf("$%s is malformed: %v", HideEnv, err)
	}
	if len(want) == 0 {
		t.Logf("$%s unset: nothing hidden", HideEnv)
	}
	detected()
	for _, f := range features {
		if want[f.name] && Has(f.name) {
			t.Errorf("%s is hidden by $%s=%q but Has reports it", f.name, HideEnv, os.Getenv(HideEnv))
		}
		if !want[f.name] && !f.amx && Has(f.name) != f.has(x86, arm64) {
			t.Errorf("%s: Has %t, detection %t, not hidden", f.name, Has(f.name), f.has(x86, arm64))
		}
	}
	if got := Hidden(); !slices.Equal(got, sortedKeys(want)) {
		t.Errorf("Hidden() = %v, want %v", got, sortedKeys(want))
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
