package gguf_test

import (
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/gguf"
	"github.com/damascus-llm/damascus/model/quant"
)

func TestStories260K(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	if len(f.KV) != 19 {
		t.Errorf("%d metadata keys, want 19", len(f.KV))
	}
	if len(f.Tensors) != 48 {
		t.Errorf("%d tensors, want 48", len(f.Tensors))
	}
	for _, kv := range f.KV {
		t.Logf("%s = %s", kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors {
		t.Logf("%s %v %s off=%d size=%d", ti.Name, ti.Dims, ti.Type, ti.Offset, ti.Size)
	}
	_ = quant.F32
}
