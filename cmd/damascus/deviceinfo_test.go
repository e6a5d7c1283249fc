package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/sysinfo"
)

func TestDeviceInfo(t *testing.T) {
	out, _ := mustRun(t, "device-info")
	for _, key := range []string{"cpu:", "features:", "amx permission:", "huge pages:", "gpu:"} {
		if !strings.Contains(out, key) {
			t.Errorf("text output lacks %q:\n%s", key, out)
		}
	}

	out, _ = mustRun(t, "device-info", "--json")
	var info sysinfo.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("--json output is not an Info: %v", err)
	}
	if info.CPU.LogicalCPUs < 1 || len(info.CPU.Features) == 0 {
		t.Errorf("JSON facts missing: %+v", info.CPU)
	}

	if code, _, _ := runCLI("device-info", "extra"); code != 2 {
		t.Errorf("extra argument: exit %d, want 2", code)
	}
}
