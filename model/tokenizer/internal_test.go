package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/internal/testmodel"
)

// TestMergeLinearMatchesHeap checks that the two merge loops of byte-level
// BPE take the same decisions, on words of every length.
func TestMergeLinearMatchesHeap(t *testing.T) {
	tok := llama3(t)
	rng := rand.New(rand.NewPCG(3, 3))
	var s bpeScratch
	for _, w := range adversarial(3, 3000) {
		if rng.IntN(2) == 0 {
			w += w + w
		}
		syms := make([]int32, len(w))
		for i := range len(w) {
			syms[i] = tok.bpe.byteSym[w[i]]
		}
		lin := tok.bpe.mergeLinear(slices.Clone(syms))
		heap := tok.bpe.mergeHeap(slices.Clone(syms), &s)
		if !slices.Equal(lin, heap) {
			t.Fatalf("%q: linear %v, heap %v", w, lin, heap)
		}
	}
}

// TestSPMSegmentationExact checks that splitting SPM text at spaces gives the
// ids of merging the whole text at once, as llama.cpp does.
func TestSPMSegmentationExact(t *testing.T) {
	tok := openGGUF(t, testdata.Llama2VocabGGUF)
	if !tok.spmSplitAtSpace || !tok.spmSplitAtNewline {
		t.Fatal("Llama 2 vocabulary should allow segmentation")
	}
	whole := *tok
	whole.spmSplitAtSpace, whole.spmSplitAtNewline = false, false
	for _, s := range adversarial(4, 3000) {
		a, err1 := tok.Encode(s, AddSpecial|ParseSpecial)
		b, err2 := whole.Encode(s, AddSpecial|ParseSpecial)
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Fatalf("%q: segmented %v (%v), whole %v (%v)", s, a, err1, b, err2)
		}
	}
}

// TestInvalidInputNeverPanics feeds random bytes to both tokenizers.
func TestInvalidInputNeverPanics(t *testing.T) {
	toks := []*Tokenizer{llama3(t), openGGUF(t, testdata.Llama2VocabGGUF)}
	rng := rand.New(rand.NewPCG(5, 5))
	for range 3000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		for _, tok := range toks {
			ids, _ := tok.Encode(string(b), AddSpecial|ParseSpecial)
			tok.Decode(ids, true)
			tok.Detokenize(ids, true, true)
		}
	}
	// A 4-byte form above U+10FFFF: llama.cpp throws; we return an error.
	if _, err := toks[0].Encode("a\xF5\x80\x80\x80b", 0); err == nil {
		t.Error("byte-level BPE accepted a sequence above U+10FFFF")
	}
	if _, err := toks[0].Decode([]int32{-1}, false); err == nil {
		t.Error("Decode accepted id -1")
	}
}

// TestStreamDecoder checks that streamed text never splits a character and
// adds up to Decode's.
func TestStreamDecoder(t *testing.T) {
	for _, tok := range []*Tokenizer{llama3(t), openGGUF(t, testdata.Llama2VocabGGUF)} {
		for _, s := range adversarial(6, 2000) {
			ids, err := tok.Encode(s, AddSpecial)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := tok.Decode(ids, false)
			d := tok.NewStreamDecoder(false)
			var got []byte
			for _, id := range ids {
				out, err := d.Next(id)
				if err != nil {
					t.Fatal(err)
				}
				if utf8.ValidString(s) && !utf8.ValidString(out) {
					t.Fatalf("%q: streamed %q, not whole characters", s, out)
				}
				got = append(got, out...)
			}
			got = append(got, d.Flush()...)
			if string(got) != string(want) {
				t.Fatalf("%q: streamed %q, Decode %q", s, got, want)
			}
		}
	}
}

func TestUnsupportedErrors(t *testing.T) {
	base := func(model, pre string) []gguf.KV {
		return []gguf.KV{
			{Key: "tokenizer.ggml.model", Value: gguf.Str(model)},
			{Key: "tokenizer.ggml.pre", Value: gguf.Str(pre)},
			{Key: "tokenizer.ggml.tokens", Value: gguf.Strs([]string{"a", "b", "ab"})},
			{Key: "tokenizer.ggml.merges", Value: gguf.Strs([]string{"a b"})},
		}
	}
	for _, tc := range []struct {
		kv   []gguf.KV
		want string
	}{
		{base("bert", ""), `tokenizer model "bert"`},
		{base("gpt2", "qwen2"), `pre-tokenizer "qwen2"`},
		{base("gpt2", ""), "without tokenizer.ggml.pre"},
		{base("", ""), "tokenizer.ggml.model missing"},
	} {
		_, err := FromKV(tc.kv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
	// llama-bpe adds BOS, so a BOS id is required (llama.cpp throws too).
	if _, err := FromKV(base("gpt2", "llama-bpe")); err == nil || !strings.Contains(err.Error(), "bos_token_id is not set") {
		t.Errorf("missing BOS: error %v", err)
	}
	// A small byte-level vocabulary builds and merges.
	tok, err := FromKV(append(base("gpt2", "llama-bpe"), gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: gguf.U32(0)}))
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := tok.Encode("ab", 0); err != nil || !slices.Equal(ids, []int32{2}) {
		t.Errorf("Encode(ab) = %v, %v", ids, err)
	}
}

// FuzzEncode checks that no input makes the tokenizers panic and that valid
// UTF-8 comes back from Decode. It needs no test data: two small
// vocabularies built in code (SentencePiece with byte fallback, byte-level
// BPE with merges) are always fuzzed, the Llama 3 and Llama 2 ones too
// where the shared files are present.
func FuzzEncode(f *testing.F) {
	for _, s := range adversarial(8, 64) {
		f.Add(s)
	}
	for _, s := range []string{"", " ", "once on the", "  the  ", "\n\t\r", "<s></s>", "<|begin_of_text|>hi", "\xff\xfe", "é日本🦀", "the the the"} {
		f.Add(s)
	}
	var toks []*Tokenizer
	for _, kv := range [][]gguf.KV{testmodel.SPMVocab(), testmodel.BPEVocab()} {
		tok, err := FromKV(kv)
		if err != nil {
			f.Fatal(err)
		}
		toks = append(toks, tok)
	}
	if testdata.Llama3TokenizerJSON.Path() != "" && testdata.Llama32Template.Path() != "" {
		toks = append(toks, llama3(f))
	}
	if testdata.Llama2VocabGGUF.Path() != "" {
		toks = append(toks, openGGUF(f, testdata.Llama2VocabGGUF))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			if ids, err := tok.Encode(s, AddSpecial|ParseSpecial); err == nil {
				tok.Detokenize(ids, true, true)
			}
			ids, err := tok.Encode(s, 0)
			if err != nil {
				continue // only a sequence above U+10FFFF, which llama.cpp cannot take either
			}
			back, err := tok.Decode(ids, true)
			if err != nil {
				t.Fatal(err)
			}
			if utf8.ValidString(s) && !(tok.Kind() == SPM && strings.Contains(s, spaceMark)) && string(back) != s {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", tok.Kind(), s, back)
			}
		}
	})
}

// TestChunkedEncodeExact checks that encoding long text in newline-cut
// pieces gives the ids of encoding it whole.
func TestChunkedEncodeExact(t *testing.T) {
	tok := llama3(t)
	var b strings.Builder
	for _, s := range adversarial(10, 4000) {
		b.WriteString(s)
		b.WriteString([]string{"\n", "\r\n", "\n\n", " \n", "\n "}[len(s)%5])
	}
	text := b.String()
	if len(text) < 4*chunkSize {
		t.Fatalf("text of %d bytes is too short to be cut", len(text))
	}
	var s scratch
	want, err := tok.bpeChunk(nil, text, &s) // whole, no special tokens in the way
	if err != nil {
		t.Fatal(err)
	}
	got, err := tok.Encode(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("chunked encoding differs from whole (%d vs %d ids)", len(got), len(want))
	}
}

// TestConcurrentEncode shares one tokenizer between goroutines (run with
// -race to check the pooled scratch memory).
func TestConcurrentEncode(t *testing.T) {
	tok := llama3(t)
	inputs := adversarial(12, 400)
	want := make([][]int32, len(inputs))
	for i, s := range inputs {
		want[i], _ = tok.Encode(s, AddSpecial)
	}
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range inputs {
				j := (i + g*97) % len(inputs)
				got, err := tok.Encode(inputs[j], AddSpecial)
				if err != nil || !slices.Equal(got, want[j]) {
					done <- fmt.Errorf("%q: %v, %v; want %v", inputs[j], got, err, want[j])
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
