package record

import (
	"testing"

	"github.com/damascus-llm/damascus/protocol"
)

func TestKVCaches(t *testing.T) {
	for cmd, want := range map[string]string{
		"ledger e2e -m x.gguf --pp 1024":                "damascus f32, llama.cpp f16",
		"ledger e2e -m x.gguf --kv-type bf16 --pp 1024": "damascus bf16, llama.cpp bf16",
		"ledger e2e --kv-type bf16 --llama-kv-type f16": "damascus bf16, llama.cpp f16",
		"ledger e2e --llama-kv-type=f32 --kv-type=f16":  "damascus f16, llama.cpp f32",
		"ledger e2e --llama-kv-type f32":                "damascus f32, llama.cpp f32",
	} {
		if got := KVCaches(&Run{Command: cmd}); got != want {
			t.Errorf("KVCaches(%q) = %q, want %q", cmd, got, want)
		}
	}
	// A record that keeps the engines' caches is read from them, not from
	// its command line.
	r := &Run{Command: "ledger e2e --kv-type f16", Protocol: protocol.Record{Engines: []protocol.Engine{
		{Name: "damascus", KVCache: "bf16"}, {Name: "llama.cpp", KVCache: "f32"}}}}
	if got, want := KVCaches(r), "damascus bf16, llama.cpp f32"; got != want {
		t.Errorf("KVCaches(engines) = %q, want %q", got, want)
	}
}

// TestLatestE2ERunsLeavesOutAB: an engine A/B (Damascus against itself)
// is not a baseline run, even the latest one.
func TestLatestE2ERunsLeavesOutAB(t *testing.T) {
	var all []Record
	for _, id := range []string{"e2e", "ab"} {
		r := Record{RunID: id, Kind: KindRun, Run: &Run{Protocol: protocol.Record{Model: &protocol.Model{SHA256: "3b"}}}}
		if id == "ab" {
			r.Run.Protocol.AB = &protocol.AB{Runs: 10}
		}
		all = append(all, r, Record{RunID: id, Kind: KindE2E, E2E: &E2E{Engine: "damascus", Test: "pp16"}})
	}
	if runs := LatestE2ERuns(all); len(runs) != 1 || runs[0][0].RunID != "e2e" {
		t.Errorf("latest runs %v, want only the e2e run", runs)
	}
}
