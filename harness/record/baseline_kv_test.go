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
