package ggml

import (
	"reflect"
	"testing"

	"github.com/damascus-llm/damascus/internal/dl"
)

// cOffsets are the field offsets gcc 12 computed (offsetof) for the structs
// in ggml/include/ggml.h and ggml-cpu.h at llama.cpp commit 5b4ebc5, in
// field order. Blank padding fields of the Go mirrors are skipped.
var cOffsets = map[string][]uintptr{
	"typeTraits":    {0, 8, 16, 24, 32, 40, 48},
	"typeTraitsCPU": {0, 8, 16, 24},
}

func TestStructOffsetsMatchC(t *testing.T) {
	for _, v := range []any{typeTraits{}, typeTraitsCPU{}} {
		name := reflect.TypeOf(v).Name()
		if got, want := dl.FieldOffsets(v), cOffsets[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s offsets\n got %v\nwant %v", name, got, want)
		}
	}
}
