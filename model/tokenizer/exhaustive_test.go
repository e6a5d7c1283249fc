package tokenizer

import (
	"os"
	"slices"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
)

// TestOracleEveryCodePoint puts every code point (surrogates included, as
// 3-byte forms) in contexts that expose its class to the Llama 3
// pre-tokenizer — after a letter, between digits, after a space, before
// punctuation, beside newlines — and compares the ids with llama.cpp. It
// checks that Go's Unicode tables agree with llama.cpp's own. It takes
// minutes, so it runs only with DAMASCUS_TOKENIZER_EXHAUSTIVE=1.
func TestOracleEveryCodePoint(t *testing.T) {
	if os.Getenv("DAMASCUS_TOKENIZER_EXHAUSTIVE") == "" {
		t.Skip("set DAMASCUS_TOKENIZER_EXHAUSTIVE=1 to compare all 1,114,112 code points")
	}
	oracle.RequireLlamaCpp(t)
	for _, pre := range []Pretokenizer{Llama3Scanner, Llama3Regexp2} {
		t.Run(pre.Name(), func(t *testing.T) {
			ours, ref := oraclePair(t, llama3GGUF(t), pre)
			everyCodePoint(t, ours, ref)
		})
	}
}

func everyCodePoint(t *testing.T, ours *Tokenizer, ref *llamacpp.Vocab) {
	probe := func(dst []byte, r rune) []byte {
		for _, ctx := range [][2]string{{"a", "b "}, {"1", "2 "}, {" ", "! "}, {"'", "s "}, {"\n", "\t\n"}, {"x ", "  y"}} {
			dst = append(dst, ctx[0]...)
			dst = appendRune(dst, r)
			dst = append(dst, ctx[1]...)
		}
		return append(dst, '\n')
	}
	const batch = 512
	bad := 0
	for lo := rune(0); lo <= maxCodePoint; lo += batch {
		var text []byte
		for r := lo; r < lo+batch && r <= maxCodePoint; r++ {
			text = probe(text, r)
		}
		got, err := ours.Encode(string(text), 0)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Tokenize(string(text), false, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(got, want) {
			continue
		}
		for r := lo; r < lo+batch && r <= maxCodePoint; r++ {
			s := string(probe(nil, r))
			got, _ := ours.Encode(s, 0)
			want, _ := ref.Tokenize(s, false, false)
			if !slices.Equal(got, want) {
				if bad++; bad <= 40 {
					t.Errorf("U+%04X (class %04b): ours %v, llama.cpp %v", r, classOf(r), got, want)
				}
			}
		}
	}
	t.Logf("%d code points differ", bad)
}
