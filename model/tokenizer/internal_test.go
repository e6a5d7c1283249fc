package tokenizer

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/damascus-llm/damascus/internal/testdata"
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
	if !tok.spmSplitAtSpace {
		t.Fatal("Llama 2 vocabulary should allow segmentation")
	}
	whole := *tok
	whole.spmSplitAtSpace = false
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
