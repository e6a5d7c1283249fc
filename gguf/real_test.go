package gguf_test

import (
	"bytes"
	"testing"

	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/quant"
)

func TestStories260K(t *testing.T) {
	f := gguftest.Open(t, testdata.Stories260KGGUF.Require(t))
	if f.Version != 3 || len(f.KV) != 19 || len(f.Tensors) != 48 {
		t.Fatalf("version %d, %d keys, %d tensors; want 3, 19, 48", f.Version, len(f.KV), len(f.Tensors))
	}
	for key, want := range map[string]uint32{
		"llama.embedding_length":        64,
		"llama.block_count":             5,
		"llama.attention.head_count":    8,
		"llama.attention.head_count_kv": 4,
		"llama.feed_forward_length":     172,
		"llama.context_length":          2048,
		"llama.rope.dimension_count":    8,
		"tokenizer.ggml.bos_token_id":   1,
	} {
		if got, err := f.Uint32(key); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	if eps, err := f.Float32("llama.attention.layer_norm_rms_epsilon"); err != nil || eps != 1e-5 {
		t.Errorf("rms epsilon %g, %v", eps, err)
	}
	if s, err := f.String("tokenizer.ggml.model"); err != nil || s != "llama" {
		t.Errorf("tokenizer model %q, %v", s, err)
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tokens) != 512 || tokens[1] != "<s>" || tokens[2] != "</s>" {
		t.Errorf("tokens: %d, %v", len(tokens), err)
	}
	if n, err := f.ArrayLen("tokenizer.ggml.scores"); err != nil || n != 512 {
		t.Errorf("scores: %d, %v", n, err)
	}
	if types, err := f.Int32s("tokenizer.ggml.token_type"); err != nil || len(types) != 512 || types[0] != 2 {
		t.Errorf("token types: %v", err)
	}
	for name, dims := range map[string][]uint64{
		"token_embd.weight":     {64, 512},
		"output.weight":         {64, 512},
		"output_norm.weight":    {64},
		"blk.0.attn_q.weight":   {64, 64},
		"blk.4.attn_k.weight":   {64, 32},
		"blk.2.ffn_down.weight": {172, 64},
		"blk.3.ffn_up.weight":   {64, 172},
	} {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Errorf("no tensor %s", name)
			continue
		}
		if ti.Type != quant.F32 || !equalDims(ti.Dims, dims) || ti.Size != 4*ti.Elements() {
			t.Errorf("%s: %s %v %d bytes, want F32 %v", name, ti.Type, ti.Dims, ti.Size, dims)
		}
		if len(f.TensorData(ti)) != int(ti.Size) {
			t.Errorf("%s: TensorData has %d bytes", name, len(f.TensorData(ti)))
		}
	}
}

func equalDims(a, b []uint64) bool { return bytes.Equal(u64bytes(a), u64bytes(b)) }

func u64bytes(s []uint64) []byte {
	var b []byte
	for _, x := range s {
		for i := range 8 {
			b = append(b, byte(x>>(8*i)))
		}
	}
	return b
}

func TestVocabOnly(t *testing.T) {
	f := gguftest.Open(t, testdata.Llama2VocabGGUF.Require(t))
	if len(f.Tensors) != 0 {
		t.Errorf("%d tensors, want 0", len(f.Tensors))
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tokens) != 32000 {
		t.Fatalf("%d tokens, %v; want 32000", len(tokens), err)
	}
	if tokens[0] != "<unk>" || tokens[1] != "<s>" || tokens[29871] != "▁" {
		t.Errorf("tokens 0, 1, 29871 = %q %q %q", tokens[0], tokens[1], tokens[29871])
	}
	if s, err := f.String("tokenizer.ggml.model"); err != nil || s != "llama" {
		t.Errorf("tokenizer model %q, %v", s, err)
	}
}

// TestRewriteIsIdentical copies the real files through the writer: the
// bytes must match the originals, which other GGUF writers made. This ties
// the writer to the format as others write it, not just to our reader.
func TestRewriteIsIdentical(t *testing.T) {
	for _, file := range []testdata.File{testdata.Stories260KGGUF, testdata.Llama2VocabGGUF} {
		t.Run(file.Rel, func(t *testing.T) {
			path := file.Require(t)
			f, orig := parseFile(t, path)
			w, err := rewriter(f)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := w.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			if !bytes.Equal(got, orig) {
				i := 0
				for i < len(got) && i < len(orig) && got[i] == orig[i] {
					i++
				}
				t.Fatalf("rewrite differs from the original at byte %d (lengths %d, %d)", i, len(got), len(orig))
			}
		})
	}
}
