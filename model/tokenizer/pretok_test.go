package tokenizer

import (
	"os"
	"slices"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestPretokenizerRegistry(t *testing.T) {
	p, err := LookupPretokenizer("llama-bpe")
	if err != nil || p != Llama3Scanner {
		t.Fatalf("default llama-bpe pre-tokenizer = %v, %v", p, err)
	}
	var names []string
	for _, v := range PretokenizerVariants("llama-bpe") {
		names = append(names, v.Name())
	}
	if !slices.Equal(names, []string{"llama3/regexp2", "llama3/scanner"}) {
		t.Errorf("variants %v", names)
	}
	if _, err := LookupPretokenizer("qwen2"); err == nil {
		t.Error("qwen2 pre-tokenizer should be reported unsupported")
	}
}

func splitWords(p Pretokenizer, s string) []string {
	var cpts []rune
	for i := 0; i < len(s); {
		r, n := decodeRune(s[i:])
		cpts = append(cpts, r)
		i += n
	}
	var words []string
	start := 0
	for _, end := range p.Split(nil, cpts) {
		words = append(words, string(cpts[start:end]))
		start = end
	}
	return words
}

func TestLlama3ScannerWords(t *testing.T) {
	for in, want := range map[string][]string{
		"Hello, world!":            {"Hello", ",", " world", "!"},
		"I'm don't YOU'LL":         {"I", "'m", " don", "'t", " YOU", "'LL"},
		"1234567":                  {"123", "456", "7"},
		"a  \n\n b":                {"a", "  \n\n", " b"},
		"x   y":                    {"x", "  ", " y"},
		"end   ":                   {"end", "   "},
		"...\n\nok":                {"...\n\n", "ok"},
		"\tabs":                    {"\tabs"},
		"naïve café":               {"naïve", " café"},
		"🦙🦙 ok":                    {"🦙🦙", " ok"},
		"'x":                       {"'x"},
		"\r\n":                     {"\r\n"},
		"$5":                       {"$", "5"},
		"  \t":                     {"  \t"},
		"ab\u00a0cd":               {"ab", "\u00a0cd"},
		"\u0661\u0662\u0663\u0664": {"\u0661\u0662\u0663", "\u0664"},
	} {
		for _, p := range []Pretokenizer{Llama3Scanner, Llama3Regexp2} {
			if got := splitWords(p, in); !slices.Equal(got, want) {
				t.Errorf("%s(%q) = %q, want %q", p.Name(), in, got, want)
			}
		}
	}
}

// TestPretokenizersAgree compares the scanner with the regexp2 rival word
// for word on the corpora and adversarial strings; the rival's differences
// are logged, not failed: it is measured, not trusted.
func TestPretokenizersAgree(t *testing.T) {
	inputs := adversarial(7, 5000)
	for _, f := range []testdata.File{testdata.TinyStoriesSample, testdata.PrideAndPrejudice} {
		if p := f.Path(); p != "" {
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, string(raw))
		}
	}
	differ := 0
	for _, s := range inputs {
		a, b := splitWords(Llama3Scanner, s), splitWords(Llama3Regexp2, s)
		if !slices.Equal(a, b) {
			if differ++; differ <= 5 {
				t.Logf("%q:\n  scanner %q\n  regexp2 %q", s, a, b)
			}
		}
	}
	t.Logf("scanner vs regexp2: %d of %d inputs split differently", differ, len(inputs))
}

// BenchmarkPretokenize splits tinyshakespeare into Llama 3 words.
func BenchmarkPretokenize(b *testing.B) {
	raw := testdata.TinyShakespeare.Read(b)
	cpts := []rune(string(raw))
	for _, p := range []Pretokenizer{Llama3Scanner, Llama3Regexp2} {
		b.Run("variant="+p.Name()[len("llama3/"):], func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			var ends []int
			for b.Loop() {
				ends = p.Split(ends[:0], cpts)
			}
			b.ReportMetric(float64(len(ends)), "words")
		})
	}
}
