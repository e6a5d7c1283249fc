package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/filehash"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
	"github.com/damascus-llm/damascus/protocol"
)

// describeModel hashes the model and counts its tensor types.
func describeModel(path string) (*protocol.Model, error) {
	g, err := gguf.Open(path) // first: it refuses a FIFO, which os.Open would block on
	if err != nil {
		return nil, err
	}
	defer g.Close()
	sum, n, err := filehash.SHA256(path)
	if err != nil {
		return nil, err
	}
	m := &protocol.Model{Path: path, SHA256: sum, Bytes: n, QuantMix: map[string]int{}}
	for _, t := range g.Tensors {
		m.QuantMix[t.Type.String()]++
		m.TensorBytes += int64(t.Size)
		if len(t.Dims) == 2 && strings.HasPrefix(t.Name, "blk.") {
			m.LayerWeights += int64(t.Elements())
		}
	}
	if name, err := g.String("general.name"); err == nil {
		m.Name = name
	}
	if ft, err := g.Uint32("general.file_type"); err == nil {
		m.FileType = fileTypeName(ft)
	}
	return m, nil
}

func fileTypeName(id uint32) string {
	for _, name := range ftype.Names() {
		if ft, err := ftype.Parse(name); err == nil && uint32(ft.ID) == id {
			return name
		}
	}
	return fmt.Sprintf("file type %d", id)
}

// syntheticModel returns the cached synthetic model of preset and type,
// making it first if needed.
func syntheticModel(preset, typ, dir string, log io.Writer) (string, error) {
	p, err := synth.LookupPreset(preset)
	if err != nil {
		return "", err
	}
	ft, err := ftype.Parse(typ)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("synth-%s-%s-seed1.gguf", p.Name, strings.ToLower(typ)))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	vocab, err := llama3vocab.Load()
	if err != nil {
		return "", fmt.Errorf("the synthetic model needs the Llama 3 tokenizer: %w", err)
	}
	fmt.Fprintf(log, "tokenizer: %s\n", vocab.Source)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var written atomic.Int64
	var pb atomic.Pointer[cli.Progress]
	w, total, err := synth.Build(synth.Options{Preset: p, Type: ft, Seed: 1, Tokenizer: vocab.Metadata(),
		Workers: runtime.NumCPU(), Progress: func(n int64) {
			if b := pb.Load(); b != nil {
				b.Set(written.Add(n)>>20, "")
			}
		}})
	if err != nil {
		return "", err
	}
	pb.Store(cli.NewProgress(log, total>>20, fmt.Sprintf("making %s (MiB)", filepath.Base(path)), false))
	if err := w.WriteFile(path); err != nil { // complete or absent, never partial
		return "", err
	}
	return path, nil
}
