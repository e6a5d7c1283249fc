package tokenizer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// writeVariant copies the metadata of the GGUF at src, lets edit change
// it, and writes a vocab-only GGUF.
func writeVariant(t *testing.T, src string, edit func(map[string]gguf.Value)) string {
	t.Helper()
	f := gguftest.Open(t, src)
	kv := map[string]gguf.Value{}
	for _, e := range f.KV {
		kv[e.Key] = e.Value
	}
	edit(kv)
	w := gguf.NewWriter()
	for _, e := range f.KV {
		if v, ok := kv[e.Key]; ok {
			w.Set(e.Key, v)
			delete(kv, e.Key)
		}
	}
	for k, v := range kv {
		w.Set(k, v)
	}
	path := filepath.Join(t.TempDir(), "variant.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// retype returns the token_type array with the named tokens set to typ.
func retype(t *testing.T, kv map[string]gguf.Value, typ TokenType, texts ...string) {
	t.Helper()
	toks := kv["tokenizer.ggml.tokens"].Slice().([]string)
	types := slices.Clone(kv["tokenizer.ggml.token_type"].Slice().([]int32))
	for _, text := range texts {
		i := slices.Index(toks, text)
		if i < 0 {
			t.Fatalf("no token %q", text)
		}
		types[i] = int32(typ)
	}
	kv["tokenizer.ggml.token_type"] = gguf.I32s(types)
}

// TestOracleVocabularyVariants edits the two vocabularies to reach the code
// paths the real ones leave unused — user-defined and unused tokens, an
// EOS added at the end, no space prefix, merges whose result is not a token —
// and compares encode, pieces and detokenize with llama.cpp on them.
func TestOracleVocabularyVariants(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	raw := testdata.TinyStoriesSample.Read(t)
	inputs := append(adversarial(11, 3000), strings.SplitAfter(string(raw), "\n")...)
	inputs = append(inputs, "the world<|python_tag|>hello world", " the  world the", "▁the <unk>the", "Hello world!")
	for _, v := range []struct {
		name string
		src  func(testing.TB) string
		edit func(map[string]gguf.Value)
	}{
		{"llama3", llama3GGUF, func(kv map[string]gguf.Value) {
			retype(t, kv, TypeUserDefined, "<|python_tag|>", "Ġworld", "hello")
			retype(t, kv, TypeUnused, "Ġcat", "<|reserved_special_token_3|>")
			toks := slices.Clone(kv["tokenizer.ggml.tokens"].Slice().([]string))
			toks[slices.Index(toks, "Ġthe")] = "Ġthe-renamed" // merges now make a non-token
			kv["tokenizer.ggml.tokens"] = gguf.Strs(toks)
			kv["tokenizer.ggml.add_eos_token"] = gguf.Bool(true)
		}},
		{"llama2-spm", requireFile(testdata.Llama2VocabGGUF), func(kv map[string]gguf.Value) {
			retype(t, kv, TypeUserDefined, "▁the", "world")
			retype(t, kv, TypeUnused, "▁cat")
			kv["tokenizer.ggml.add_space_prefix"] = gguf.Bool(false)
			kv["tokenizer.ggml.add_eos_token"] = gguf.Bool(true)
		}},
	} {
		t.Run(v.name, func(t *testing.T) {
			path := writeVariant(t, v.src(t), v.edit)
			ours, ref := oraclePair(t, path)
			m := &mismatches{t: t}
			parallel(inputs, func(s string) {
				for _, flags := range []EncodeFlags{AddSpecial, AddSpecial | ParseSpecial, 0} {
					got, err := ours.Encode(s, flags)
					want, err2 := ref.Tokenize(s, flags&AddSpecial != 0, flags&ParseSpecial != 0)
					if err != nil || err2 != nil {
						t.Errorf("%q: %v / %v", s, err, err2)
						return
					}
					m.check("variant", s, got, want)
					for _, d := range [][2]bool{{true, false}, {false, true}} {
						gotText, _ := ours.Detokenize(got, d[0], d[1])
						wantText, err := ref.Detokenize(want, d[0], d[1])
						if err == nil && string(gotText) != wantText {
							t.Errorf("Detokenize(%v, %v) = %q, llama.cpp %q", want, d, gotText, wantText)
						}
					}
				}
			})
			m.report(v.name)
			comparePieces(t, ours, ref, 5)
		})
	}
}
