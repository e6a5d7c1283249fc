package gguf_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// BenchmarkParse parses real files from memory. The vocab file is dominated
// by its 32,000-string token array. $DAMASCUS_GGUF_BENCH names one more file
// (a synthetic Llama 3 model has a 128,256-token vocabulary).
func BenchmarkParse(b *testing.B) {
	files := []struct{ name, path string }{
		{"vocab-llama-spm", testdata.Llama2VocabGGUF.Path()},
		{"stories260K", testdata.Stories260KGGUF.Path()},
	}
	if p := os.Getenv("DAMASCUS_GGUF_BENCH"); p != "" {
		files = append(files, struct{ name, path string }{filepath.Base(p), p})
	}
	for _, c := range files {
		b.Run("file="+c.name, func(b *testing.B) {
			if c.path == "" {
				b.Skip("test data absent; see internal/testdata")
			}
			data, err := os.ReadFile(c.path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gguf.Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
