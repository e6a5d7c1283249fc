package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testmodel"
	"github.com/damascus-llm/damascus/model/llama"
)

// --api-key's list and --api-key-file's lines make the keys; a file that
// cannot be read or holds none is an error naming it.
func TestAPIKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte("# team keys\nk3\n\n  k4  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := apiKeys(" k1, ,k2", file)
	if err != nil || !slices.Equal(keys, []string{"k1", "k2", "k3", "k4"}) {
		t.Errorf("keys %q, %v", keys, err)
	}
	if keys, err := apiKeys("", ""); err != nil || keys != nil {
		t.Errorf("no keys: %q, %v", keys, err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("# none yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{empty, filepath.Join(dir, "missing")} {
		if _, err := apiKeys("", f); err == nil || !strings.Contains(err.Error(), "--api-key-file") {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestAllowOrigins(t *testing.T) {
	got, err := allowOrigins(" http://localhost:3000, https://chat.example.org/ ,*")
	if err != nil || !slices.Equal(got, []string{"http://localhost:3000", "https://chat.example.org", "*"}) {
		t.Errorf("origins %q, %v", got, err)
	}
	for _, bad := range []string{"localhost:3000", "ftp://x", "http://x/path", "http://", "http://u@x"} {
		if _, err := allowOrigins(bad); err == nil || !strings.Contains(err.Error(), "--allow-origin") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// --embeddings' flags: a pooling without --embeddings, an unknown or a
// per-token one, and the GPU are refused before anything is served; the
// pooling comes from --pooling, else the model's pooling_type where it
// gives one vector, else mean.
func TestServeEmbeddingFlags(t *testing.T) {
	model := testmodel.WriteTemp(t, testmodel.Options{})
	fails(t, []string{"serve", "-m", model, "--port", "0", "--pooling", "mean"}, "--pooling is for --embeddings")
	fails(t, []string{"serve", "-m", model, "--port", "0", "--embeddings", "--pooling", "rank"}, "--pooling", "rank")
	fails(t, []string{"serve", "-m", model, "--port", "0", "--embeddings", "--pooling", "none"}, "--pooling none")
	fails(t, []string{"serve", "-m", model, "--port", "0", "--embeddings", "--device", "cuda"}, "--embeddings runs on the CPU only")
	for _, c := range []struct {
		meta uint32
		flag string
		want llama.Pooling
	}{{0, "", llama.PoolMean}, {3, "", llama.PoolLast}, {2, "", llama.PoolCLS}, {3, "mean", llama.PoolMean}, {4, "", llama.PoolMean}} {
		path := testmodel.WriteTemp(t, testmodel.Options{Set: map[string]gguf.Value{"llama.pooling_type": gguf.U32(c.meta)}})
		ld, err := llama.Load(path, llama.LoadOptions{Placement: llama.PlaceMmap})
		if err != nil {
			t.Fatal(err)
		}
		p, set, err := poolingFlag(c.flag)
		if err != nil {
			t.Fatal(err)
		}
		if !set {
			p = ld.Model.Config.EmbedPooling()
		}
		e, note, err := openEmbedder(ld.Model, &engineFlags{threads: 1}, 16, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(note, c.want.String()) {
			t.Errorf("pooling_type %d, --pooling %q: %q, want %v", c.meta, c.flag, note, c.want)
		}
		e.Close()
		ld.Close()
	}
}
