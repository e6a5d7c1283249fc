package gguf_test

import (
	"os"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/gguf"
)

// BenchmarkParse parses real files from memory. The vocab file is dominated
// by its 32,000-string token array.
func BenchmarkParse(b *testing.B) {
	for _, c := range []struct {
		name string
		file testdata.File
	}{
		{"vocab-llama-spm", testdata.Llama2VocabGGUF},
		{"stories260K", testdata.Stories260KGGUF},
	} {
		b.Run("file="+c.name, func(b *testing.B) {
			data, err := os.ReadFile(c.file.Require(b))
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
