package gguf_test

import (
	"bytes"
	"fmt"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/quant"
)

func Example() {
	w := gguf.NewWriter()
	w.Set("general.architecture", gguf.Str("llama"))
	w.Set("llama.block_count", gguf.U32(2))
	w.Set("tokenizer.ggml.tokens", gguf.Strs([]string{"<unk>", "<s>", "</s>"}))
	if err := w.AddTensor("output_norm.weight", quant.F32, []uint64{2}, make([]byte, 8)); err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		panic(err)
	}

	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		panic(err)
	}
	layers, _ := f.Uint32("llama.block_count")
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	t, _ := f.Tensor("output_norm.weight")
	fmt.Println(layers, len(tokens), t.Type, t.Dims, len(f.TensorData(t)))
	_, err = f.Float32("llama.block_count")
	fmt.Println(err)

	_, err = gguf.Parse(buf.Bytes()[:100])
	fmt.Println(err)
	// Output:
	// 2 3 F32 [2] 8
	// gguf: key "llama.block_count" is u32, want f32 or f64
	// gguf: file ends inside the value of key "llama.block_count" (needs 4 bytes, 2 left) (at byte offset 98)
}
