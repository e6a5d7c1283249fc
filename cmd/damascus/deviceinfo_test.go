package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/sysinfo"
)

func TestDeviceInfo(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"device-info"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, key := range []string{"cpu:", "features:", "amx permission:", "huge pages:", "gpu:"} {
		if !strings.Contains(out.String(), key) {
			t.Errorf("text output lacks %q:\n%s", key, out.String())
		}
	}

	out.Reset()
	if code := run([]string{"device-info", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("--json exit %d: %s", code, errOut.String())
	}
	var info sysinfo.Info
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		t.Fatalf("--json output is not an Info: %v", err)
	}
	if info.CPU.LogicalCPUs < 1 || len(info.CPU.Features) == 0 {
		t.Errorf("JSON facts missing: %+v", info.CPU)
	}

	if code := run([]string{"device-info", "extra"}, &out, &errOut); code != 2 {
		t.Errorf("extra argument: exit %d, want 2", code)
	}
}
