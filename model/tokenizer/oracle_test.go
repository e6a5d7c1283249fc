package tokenizer

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/internal/testfile"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
)

// llama3Vocab is the Llama 3 vocabulary written by llama3vocab, once per
// test binary.
var llama3Vocab = testfile.New("llama3-vocab.gguf", llama3vocab.WriteVocabGGUF)

// llama3GGUF returns the path of llama3Vocab.
func llama3GGUF(tb testing.TB) string {
	tb.Helper()
	testdata.Llama3TokenizerJSON.Require(tb)
	testdata.Llama32Template.Require(tb)
	path, err := llama3Vocab.Path()
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestMain(m *testing.M) { testfile.Main(m, llama3Vocab) }

// oraclePair opens one GGUF vocabulary both ways; pre, when not nil,
// replaces our pre-tokenizer.
func oraclePair(t *testing.T, path string, pre ...Pretokenizer) (*Tokenizer, *llamacpp.Vocab) {
	t.Helper()
	gf := gguftest.Open(t, path)
	spec, err := SpecFromGGUF(gf)
	if err != nil {
		t.Fatal(err)
	}
	if len(pre) > 0 {
		spec.Pretokenizer = pre[0]
	}
	ours, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := llamacpp.OpenVocab(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	return ours, ref
}

// comparePieces reports the tokens whose pieces, plain and special, differ
// from llama.cpp's (the first limit of them) and returns how many differ.
func comparePieces(t *testing.T, ours *Tokenizer, ref *llamacpp.Vocab, limit int) int {
	t.Helper()
	bad := 0
	for id := int32(0); id < int32(ours.NumTokens()); id++ {
		for _, special := range []bool{false, true} {
			got, _ := ours.Piece(id, special)
			want, err := ref.TokenToPiece(id, special)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				if bad++; bad <= limit {
					t.Errorf("Piece(%d, special=%v) = %q, llama.cpp %q", id, special, got, want)
				}
			}
		}
	}
	return bad
}

// corpusLines returns every line (newline kept) of the three shared corpora.
func corpusLines(t *testing.T) []string {
	var lines []string
	for _, f := range []testdata.File{testdata.TinyShakespeare, testdata.PrideAndPrejudice, testdata.TinyStoriesSample} {
		lines = append(lines, strings.SplitAfter(string(f.Read(t)), "\n")...)
	}
	return lines
}

type mismatches struct {
	t     *testing.T
	mu    sync.Mutex
	n     int
	total int
}

func (m *mismatches) check(what, input string, got, want []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total++
	if slices.Equal(got, want) {
		return
	}
	m.n++
	if m.n > 10 {
		return
	}
	if len(input) > 400 { // a whole file: show where the ids part
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-8)
		m.t.Errorf("%s (%d bytes): ids differ from index %d\n  ours:      …%v\n  llama.cpp: …%v",
			what, len(input), i, got[lo:min(len(got), i+8)], want[lo:min(len(want), i+8)])
		return
	}
	m.t.Errorf("%s: %q\n  ours:      %v\n  llama.cpp: %v", what, input, got, want)
}

func (m *mismatches) report(name string) {
	m.t.Logf("%s: %d inputs compared, %d mismatches", name, m.total, m.n)
	if m.n > 10 {
		m.t.Errorf("%s: %d mismatches in all (first 10 shown)", name, m.n)
	}
}

// parallel calls f on every input from GOMAXPROCS goroutines: both
// tokenizers are safe for concurrent use, and CI has more than one core.
func parallel(inputs []string, f func(string)) {
	var wg sync.WaitGroup
	next := make(chan string, 64)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for s := range next {
				f(s)
			}
		})
	}
	for _, s := range inputs {
		next <- s
	}
	close(next)
	wg.Wait()
}

// TestOracleEncode compares token ids with the pinned llama.cpp on every
// corpus line and 10,000 adversarial strings, for the Llama 3 vocabulary
// (written by llama3vocab) and the Llama 2 SPM vocabulary, with and without
// special-token parsing. It also checks Decode(Encode(x)) == x.
func TestOracleEncode(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	lines := corpusLines(t)
	adv := adversarial(1, 10000)
	for _, v := range []struct {
		name string
		path func(testing.TB) string
	}{
		{"llama3", llama3GGUF},
		{"llama2-spm", requireFile(testdata.Llama2VocabGGUF)},
	} {
		t.Run(v.name, func(t *testing.T) {
			ours, ref := oraclePair(t, v.path(t))
			m := &mismatches{t: t}
			compare := func(what, s string, flags EncodeFlags) {
				got, err := ours.Encode(s, flags)
				if err != nil {
					t.Errorf("%s: Encode(%q): %v", what, s, err)
					return
				}
				want, err := ref.Tokenize(s, flags&AddSpecial != 0, flags&ParseSpecial != 0)
				if err != nil {
					t.Error(err)
					return
				}
				m.check(what, s, got, want)
			}
			parallel(lines, func(s string) { compare("corpus line", s, AddSpecial) })
			for _, f := range []testdata.File{testdata.TinyStoriesSample, testdata.PrideAndPrejudice} {
				compare("whole file "+f.Rel, string(f.Read(t)), AddSpecial|ParseSpecial)
			}
			parallel(adv, func(s string) {
				compare("adversarial", s, AddSpecial)
				compare("adversarial, parse special", s, AddSpecial|ParseSpecial)
			})
			m.report(v.name)
			if ours.Kind() == BPE {
				rivalExactness(t, v.path(t), adv)
			}

			roundTrips := 0
			for _, s := range append(slices.Clip(lines), adv...) {
				// Invalid UTF-8 is not kept by byte-level BPE (it becomes
				// U+FFFD), and SPM reads a literal ▁ as a space.
				if !utf8.ValidString(s) || ours.Kind() == SPM && strings.Contains(s, spaceMark) {
					continue
				}
				ids, _ := ours.Encode(s, AddSpecial)
				back, err := ours.Decode(ids, false)
				if err != nil || string(back) != s {
					t.Errorf("Decode(Encode(%q)) = %q, %v", s, back, err)
					break
				}
				roundTrips++
			}
			t.Logf("%s: %d round trips", v.name, roundTrips)
		})
	}
}

// TestOracleDecode compares every token's piece, and the detokenization of
// adversarial encodings, with llama.cpp.
func TestOracleDecode(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	adv := append(adversarial(2, 500),
		"a ' b", "x ' ' y", "it 's", "I 'm", "we 're", "they 've", "don 't", "he 'd", "we 'll", " ' ", "' '",
		"Hi , there . Why ? No !", " ,", "a '", "' s", "x 'll y", "q 're", " 've", "a ' ' ' b", "end .")
	for _, v := range []struct {
		name string
		path func(testing.TB) string
	}{
		{"llama3", llama3GGUF},
		{"llama2-spm", requireFile(testdata.Llama2VocabGGUF)},
		{"stories260K", requireFile(testdata.Stories260KGGUF)},
	} {
		t.Run(v.name, func(t *testing.T) {
			ours, ref := oraclePair(t, v.path(t))
			if ours.NumTokens() != ref.NTokens() || ours.BOS() != ref.BOS() || ours.EOS() != ref.EOS() || ours.AddBOS() != ref.AddsBOS() {
				t.Errorf("vocab: ours %d tokens, bos %d, eos %d, add bos %v; llama.cpp %d, %d, %d, %v",
					ours.NumTokens(), ours.BOS(), ours.EOS(), ours.AddBOS(), ref.NTokens(), ref.BOS(), ref.EOS(), ref.AddsBOS())
			}
			bad := comparePieces(t, ours, ref, 10)
			for _, s := range adv {
				ids, err := ours.Encode(s, AddSpecial|ParseSpecial)
				if err != nil {
					t.Fatal(err)
				}
				for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					got, _ := ours.Detokenize(ids, flags[0], flags[1])
					want, err := ref.Detokenize(ids, flags[0], flags[1])
					if err != nil {
						t.Fatal(err)
					}
					if string(got) != want {
						if bad++; bad <= 10 {
							t.Errorf("Detokenize(%v, remove=%v, unparse=%v) = %q, llama.cpp %q", ids, flags[0], flags[1], got, want)
						}
					}
				}
			}
		})
	}
}

// rivalExactness measures the regexp2 pre-tokenizer against llama.cpp on
// the same inputs. Its mismatches are reported, not failed: the rival is
// kept for comparison, the scanner is what the engine uses.
func rivalExactness(t *testing.T, path string, adv []string) {
	ours, ref := oraclePair(t, path, Llama3Regexp2)
	var mu sync.Mutex
	total, differ := 0, 0
	parallel(adv, func(s string) {
		got, err := ours.Encode(s, AddSpecial)
		want, err2 := ref.Tokenize(s, true, false)
		mu.Lock()
		defer mu.Unlock()
		total++
		if err != nil || err2 != nil || !slices.Equal(got, want) {
			if differ++; differ <= 3 {
				t.Logf("regexp2 rival differs on %q:\n  ours:      %v (%v)\n  llama.cpp: %v (%v)", s, got, err, want, err2)
			}
		}
	})
	t.Logf("regexp2 rival: %d adversarial inputs compared, %d mismatches", total, differ)
}

// requireFile is f.Require as a func of testing.TB, for tables of sources.
func requireFile(f testdata.File) func(testing.TB) string {
	return func(tb testing.TB) string { return f.Require(tb) }
}
