package tokenizer

import (
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// BenchmarkEncode encodes tinyshakespeare (1.1 MB) whole, ours against the
// pinned llama.cpp on the same GGUF vocabulary and the same flags.
func BenchmarkEncode(b *testing.B) {
	text := string(testdata.TinyShakespeare.Read(b))
	for _, v := range []struct {
		name string
		path func(testing.TB) string
	}{
		{"llama3", llama3GGUF},
		{"llama2-spm", requireFile(testdata.Llama2VocabGGUF)},
	} {
		path := v.path(b)
		b.Run("vocab="+v.name+"/impl=damascus", func(b *testing.B) {
			tok := openPath(b, path)
			b.SetBytes(int64(len(text)))
			var n int
			for b.Loop() {
				ids, err := tok.Encode(text, AddSpecial)
				if err != nil {
					b.Fatal(err)
				}
				n = len(ids)
			}
			b.ReportMetric(float64(n), "tokens")
		})
		b.Run("vocab="+v.name+"/impl=llama.cpp", func(b *testing.B) {
			oracle.RequireLlamaCpp(b)
			ref, err := llamacpp.OpenVocab(path)
			if err != nil {
				b.Fatal(err)
			}
			defer ref.Close()
			b.SetBytes(int64(len(text)))
			var n int
			for b.Loop() {
				ids, err := ref.Tokenize(text, true, false)
				if err != nil {
					b.Fatal(err)
				}
				n = len(ids)
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

// BenchmarkLoad builds the Llama 3 tokenizer from its vocab-only GGUF, ours
// against llama.cpp's vocab-only load of the same file.
func BenchmarkLoad(b *testing.B) {
	path := llama3GGUF(b)
	b.Run("impl=damascus", func(b *testing.B) {
		for b.Loop() {
			openPath(b, path)
		}
	})
	b.Run("impl=llama.cpp", func(b *testing.B) {
		oracle.RequireLlamaCpp(b)
		for b.Loop() {
			v, err := llamacpp.OpenVocab(path)
			if err != nil {
				b.Fatal(err)
			}
			v.Close()
		}
	})
}
