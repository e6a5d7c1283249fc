package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/quant"
)

// wantLines checks that each "field value" pair appears as a line of the
// info table.
func wantLines(t *testing.T, out string, pairs ...string) {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pairs[i]) + `\s{2,}` + regexp.QuoteMeta(pairs[i+1]) + `$`)
		if !re.MatchString(out) {
			t.Errorf("no line %q = %q in:\n%s", pairs[i], pairs[i+1], out)
		}
	}
}

func TestInfoStories260K(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	code, out, errs := runCLI("info", "--sha256", path, "--tensors")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	wantLines(t, out,
		"architecture", `"llama"`,
		"layers", "5",
		"embedding length", "64",
		"feed-forward length", "172",
		"attention heads", "8",
		"kv heads", "4",
		"head dim", "8 (embedding_length / head_count)",
		"context length", "2048",
		"rms norm epsilon", "1e-05",
		"rope freq base", "absent",
		"rope frequency factors", "absent (no rope_freqs.weight)",
		"vocab size", "512 (tokenizer.ggml.tokens)",
		"tokenizer model", `"llama" (SPM)`,
		"pre-tokenizer", "absent",
		"output head", "separate (output.weight)",
		"tensors", "48",
		"  F32", "48 tensors, 1,171,200 bytes (1.1 MiB)",
		"file size", "1,185,376 bytes (1.1 MiB)",
	)
	if !regexp.MustCompile(`(?m)^sha256\s+270cba1b[0-9a-f]{56}$`).MatchString(out) {
		t.Errorf("no sha256 line starting 270cba1b in:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^blk\.2\.ffn_down\.weight\s+F32\s+\[172 64\]\s+\d+\s+44032$`).MatchString(out) {
		t.Errorf("tensor list lacks blk.2.ffn_down.weight:\n%s", out)
	}
	if n := strings.Count(out, ".weight "); n != 48 {
		t.Errorf("tensor list has %d rows, want 48", n)
	}
}

func TestInfoVocabOnly(t *testing.T) {
	code, out, errs := runCLI("info", testdata.Llama2VocabGGUF.Require(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	wantLines(t, out,
		"vocab size", "32000 (tokenizer.ggml.tokens)",
		"tokenizer model", `"llama" (SPM)`,
		"pre-tokenizer", `"default"`,
		"tensors", "0",
		"output head", "absent (no tensors)",
	)
}

// TestInfoSynthetic covers what the shared files lack: rope scaling, an
// explicit head dim, frequency factors, a tied head, K-quant tensors, a
// key of the wrong type and a missing tokenizer.
func TestInfoSynthetic(t *testing.T) {
	w := gguf.NewWriter()
	w.Set("general.architecture", gguf.Str("llama"))
	w.Set("llama.block_count", gguf.Str("many")) // wrong type
	w.Set("llama.embedding_length", gguf.U32(3072))
	w.Set("llama.attention.head_count", gguf.I32(24)) // a signed writer
	w.Set("llama.attention.key_length", gguf.U64(128))
	w.Set("llama.rope.freq_base", gguf.F32(500000))
	w.Set("llama.rope.scaling.type", gguf.Str("llama3"))
	w.Set("llama.rope.scaling.factor", gguf.F64(32))
	w.Set("llama.rope.scaling.original_context_length", gguf.U32(8192))
	w.Set("llama.vocab_size", gguf.U32(128256))
	add := func(name string, typ quant.Type, dims ...uint64) {
		size, err := quant.RowSize(typ, int64(dims[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dims[1:] {
			size *= int64(d)
		}
		if err := w.AddTensor(name, typ, dims, make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	add("token_embd.weight", quant.Q6_K, 256, 4)
	add("blk.0.attn_q.weight", quant.Q4_K, 256, 2)
	add("blk.0.attn_k.weight", quant.Q4_K, 256, 1)
	add("rope_freqs.weight", quant.F32, 64)
	out := infoOf(t, w)
	wantLines(t, out,
		"layers", `invalid (gguf: key "llama.block_count" is str, want an unsigned integer)`,
		"attention heads", "24",
		"kv heads", "absent",
		"head dim", "128",
		"rope freq base", "500000",
		"rope scaling type", `"llama3"`,
		"rope scaling factor", "32",
		"rope original context", "8192",
		"rope frequency factors", "rope_freqs.weight (F32 [64])",
		"vocab size", "128256 (llama.vocab_size)",
		"tokenizer model", "absent",
		"output head", "tied (token_embd.weight, no output.weight)",
		"tensors", "4",
		"  F32", "1 tensors, 256 bytes",
		"  Q4_K", "2 tensors, 432 bytes",
		"  Q6_K", "1 tensors, 840 bytes",
	)
}

// infoOf writes w to a temporary file and returns what damascus info prints
// for it, failing t unless the command succeeds.
func infoOf(t *testing.T, w *gguf.Writer) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("info", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	return out
}

func TestInfoNoArchitecture(t *testing.T) {
	w := gguf.NewWriter()
	w.Set(".block_count", gguf.U32(3)) // must not be read as "<no arch>.block_count"
	out := infoOf(t, w)
	wantLines(t, out, "architecture", "absent", "layers", "absent", "head dim", "absent", "vocab size", "absent")
}

// TestInfoMalformed: truncated and corrupted files give exit 1 and one line
// naming the problem and its offset, never a panic.
func TestInfoMalformed(t *testing.T) {
	orig := testdata.Stories260KGGUF.Read(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.gguf")
	check := func(what string, data []byte, mayPass bool) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI("info", path)
		if code == 0 && mayPass {
			return
		}
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "byte offset") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line naming the offset", what, code, out, errs)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 3, 4, 7, 8, 20, 24, 30, 100, 5000, 14000, 14170, 14176, 500000, len(orig) - 1} {
		check("truncated to "+strconv.Itoa(n), orig[:n], false)
	}
	for range 20 {
		n := rng.IntN(len(orig))
		check("truncated to "+strconv.Itoa(n), orig[:n], false)
	}
	// Flips in the header and tensor directory; many are harmless (a byte
	// of a token string), the rest must fail cleanly.
	for range 300 {
		data := bytes.Clone(orig)
		i := rng.IntN(14176) // the data section starts here
		data[i] ^= 1 << rng.IntN(8)
		check("bit flip in byte "+strconv.Itoa(i), data, true)
	}
	check("bad magic", append([]byte("GGML"), orig[4:]...), false)
}

func TestInfoUsage(t *testing.T) {
	if code, _, errs := runCLI("info"); code != 2 || !strings.Contains(errs, "usage: damascus info") {
		t.Errorf("no args: exit %d, %q", code, errs)
	}
	if code, _, _ := runCLI("info", "a.gguf", "b.gguf"); code != 2 {
		t.Errorf("two paths: exit %d", code)
	}
	if code, _, errs := runCLI("info", filepath.Join(t.TempDir(), "missing.gguf")); code != 1 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("info", t.TempDir()); code != 1 || !strings.Contains(errs, "not a regular file") {
		t.Errorf("directory: exit %d, %q", code, errs)
	}
}
