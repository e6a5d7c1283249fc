package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/damascus-llm/damascus/harness/roofline"
)

func TestProbeCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"probe", "--json", "--mem", "4", "--threads", "1", "--repeats", "1", "--compute-ms", "2"}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var r roofline.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not a roofline.Report: %v\n%s", err, out.String())
	}
	probes := map[string]bool{}
	for _, m := range r.Measurements {
		probes[m.Probe] = true
		if m.Skipped == "" && !(m.Best > 0) {
			t.Errorf("%+v: neither measured nor skipped", m)
		}
	}
	for _, p := range []string{roofline.ProbeMemRead, roofline.ProbeFP32FMA, roofline.ProbeInt8VNNI, roofline.ProbeAMXInt8, roofline.ProbeAMXBF16} {
		if !probes[p] {
			t.Errorf("probe %s missing from the report", p)
		}
	}
	if code := run([]string{"probe", "--threads", "0"}, &out, &errOut); code != 2 {
		t.Errorf("--threads 0: exit %d, want 2", code)
	}
}
