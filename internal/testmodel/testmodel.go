// Package testmodel builds tiny Llama GGUF files in code for tests that must
// run without the shared test data: a few F32 layers of pseudo-random
// weights and a small SentencePiece vocabulary with byte fallback (so any
// text encodes), or a small byte-level BPE vocabulary. Metadata can be
// overridden and a NaN planted, to test how damaged files are handled.
package testmodel

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/quant"
)

// Options shape the model. Zero fields take the defaults of Default.
type Options struct {
	Layers, Dim, FFN, Heads, KVHeads, Context int
	Seed                                      uint64
	// Set overrides (or adds) metadata after the defaults are written.
	Set map[string]gguf.Value
	// NaNIn names a tensor whose first value is made NaN.
	NaNIn string
}

// Default is the shape a zero Options takes: 2 layers of width 32, 4 heads
// of 8 sharing 2 KV heads, a 64-wide FFN and a context of 256.
var Default = Options{Layers: 2, Dim: 32, FFN: 64, Heads: 4, KVHeads: 2, Context: 256, Seed: 1}

func (o Options) withDefaults() Options {
	d := Default
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&o.Layers, d.Layers)
	set(&o.Dim, d.Dim)
	set(&o.FFN, d.FFN)
	set(&o.Heads, d.Heads)
	set(&o.KVHeads, d.KVHeads)
	set(&o.Context, d.Context)
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	return o
}

// Writer returns the model as a GGUF writer.
func Writer(o Options) (*gguf.Writer, error) {
	o = o.withDefaults()
	if o.Dim%o.Heads != 0 || o.Heads%o.KVHeads != 0 {
		return nil, fmt.Errorf("testmodel: dim %d, %d heads, %d KV heads do not fit", o.Dim, o.Heads, o.KVHeads)
	}
	hd := o.Dim / o.Heads
	w := gguf.NewWriter()
	for _, kv := range []gguf.KV{
		{Key: "general.architecture", Value: gguf.Str("llama")},
		{Key: "general.name", Value: gguf.Str("testmodel")},
		{Key: "llama.block_count", Value: gguf.U32(uint32(o.Layers))},
		{Key: "llama.context_length", Value: gguf.U32(uint32(o.Context))},
		{Key: "llama.embedding_length", Value: gguf.U32(uint32(o.Dim))},
		{Key: "llama.feed_forward_length", Value: gguf.U32(uint32(o.FFN))},
		{Key: "llama.attention.head_count", Value: gguf.U32(uint32(o.Heads))},
		{Key: "llama.attention.head_count_kv", Value: gguf.U32(uint32(o.KVHeads))},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.F32(1e-5)},
		{Key: "llama.rope.dimension_count", Value: gguf.U32(uint32(hd))},
		{Key: "general.file_type", Value: gguf.U32(0)},
	} {
		w.Set(kv.Key, kv.Value)
	}
	vocab := SPMVocab()
	for _, kv := range vocab {
		w.Set(kv.Key, kv.Value)
	}
	for k, v := range o.Set {
		w.Set(k, v)
	}
	n := vocab[1].Value.Len()
	rng := rand.New(rand.NewPCG(o.Seed, 0x7e57))
	nanDone := false
	add := func(name string, dims ...int) error {
		count := 1
		ud := make([]uint64, len(dims))
		for i, d := range dims {
			count *= d
			ud[i] = uint64(d)
		}
		data := make([]byte, 4*count)
		for i := range count {
			v := float32(1) // norms
			if len(dims) == 2 {
				v = float32(rng.NormFloat64() * 0.3)
			}
			if i == 0 && name == o.NaNIn {
				v, nanDone = float32(math.NaN()), true
			}
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		return w.AddTensor(name, quant.F32, ud, data)
	}
	qd, kvd := o.Heads*hd, o.KVHeads*hd
	type t struct {
		name string
		dims []int
	}
	ts := []t{{"token_embd.weight", []int{o.Dim, n}}, {"output_norm.weight", []int{o.Dim}}, {"output.weight", []int{o.Dim, n}}}
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			t{p + "attn_norm.weight", []int{o.Dim}}, t{p + "attn_q.weight", []int{o.Dim, qd}},
			t{p + "attn_k.weight", []int{o.Dim, kvd}}, t{p + "attn_v.weight", []int{o.Dim, kvd}},
			t{p + "attn_output.weight", []int{qd, o.Dim}}, t{p + "ffn_norm.weight", []int{o.Dim}},
			t{p + "ffn_gate.weight", []int{o.Dim, o.FFN}}, t{p + "ffn_up.weight", []int{o.Dim, o.FFN}},
			t{p + "ffn_down.weight", []int{o.FFN, o.Dim}})
	}
	for _, x := range ts {
		if err := add(x.name, x.dims...); err != nil {
			return nil, err
		}
	}
	if o.NaNIn != "" && !nanDone {
		return nil, fmt.Errorf("testmodel: no tensor %q to put a NaN in", o.NaNIn)
	}
	return w, nil
}

// Write writes the model to path.
func Write(path string, o Options) error {
	w, err := Writer(o)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// WriteTemp writes the model into a temporary directory of tb (removed when
// the test ends) and returns its path, failing tb if it cannot: the step
// every test of a damaged or tiny model starts with.
func WriteTemp(tb testing.TB, o Options) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "testmodel.gguf")
	if err := Write(p, o); err != nil {
		tb.Fatal(err)
	}
	return p
}

// SPMVocab is a SentencePiece ("llama") vocabulary: <unk>, <s>, </s>, the
// 256 byte-fallback tokens and a few merged pieces, BOS added.
func SPMVocab() []gguf.KV {
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3} // unknown, control, control
	for b := range 256 {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6) // byte
	}
	for _, p := range []string{"▁", "e", "t", "h", "a", "o", "n", "▁t", "he", "▁the", "▁a", "an", "on", "▁on", "ce", "▁once"} {
		toks = append(toks, p)
		types = append(types, 1)
	}
	scores := make([]float32, len(toks))
	for i := range scores {
		scores[i] = -float32(i) // longer pieces come later: lower score, as SentencePiece's order
	}
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Str("llama")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Strs(toks)},
		{Key: "tokenizer.ggml.scores", Value: gguf.F32s(scores)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.I32s(types)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: gguf.U32(0)},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.U32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.U32(2)},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(true)},
	}
}

// BPEVocab is a byte-level BPE ("gpt2", Llama 3's pre-tokenizer)
// vocabulary: the 256 byte symbols in GPT-2's byte-to-unicode mapping, a few
// merges and Llama 3's begin/end of text as control tokens, BOS added.
func BPEVocab() []gguf.KV {
	var sym [256]string
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE {
			sym[b] = string(rune(b))
		} else {
			sym[b] = string(rune(256 + n))
			n++
		}
	}
	toks := sym[:]
	toks = append([]string(nil), toks...)
	sp := sym[' ']
	merges := []string{sp + " t", "h e", sp + "t he", sp + " a", "i n", sp + " w", "o u", "e r", "a n", "t h"}
	types := make([]int32, len(toks))
	for i := range types {
		types[i] = 1
	}
	for _, m := range merges {
		var a, b string
		fmt.Sscanf(m, "%s %s", &a, &b)
		toks = append(toks, a+b)
		types = append(types, 1)
	}
	bos := len(toks)
	toks = append(toks, "<|begin_of_text|>", "<|end_of_text|>")
	types = append(types, 3, 3)
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Str("gpt2")},
		{Key: "tokenizer.ggml.pre", Value: gguf.Str("llama-bpe")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Strs(toks)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.I32s(types)},
		{Key: "tokenizer.ggml.merges", Value: gguf.Strs(merges)},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.U32(uint32(bos))},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.U32(uint32(bos + 1))},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(true)},
	}
}
