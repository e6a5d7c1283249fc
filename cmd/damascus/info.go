package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/filehash"
	"github.com/damascus-llm/damascus/quant"
)

func init() {
	commands.Define("info", "describe a GGUF model: architecture, hyperparameters, tokenizer, tensors", "usage: damascus info MODEL.gguf [--sha256] [--tensors]", runInfo)
}

func runInfo(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	withHash := fs.Bool("sha256", false, "print the file's SHA-256")
	withTensors := fs.Bool("tensors", false, "list every tensor: name, type, shape, offset, bytes")
	paths, err := cli.ParseInterspersed(fs, args) // flags before or after the model path
	if err != nil {
		return err
	}
	if len(paths) != 1 {
		fs.Usage()
		return errUsage
	}
	path := paths[0]

	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	describeModel(tw, path, f)
	if *withHash {
		sum, _, err := filehash.SHA256(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "sha256\t%s\n", sum)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *withTensors {
		return listTensors(stdout, f)
	}
	return nil
}

// describeModel writes one "name<TAB>value" line per fact. A missing key
// reads "absent"; a key of the wrong type reads "invalid (why)".
func describeModel(w io.Writer, path string, f *gguf.File) {
	line := func(name, value string) { fmt.Fprintf(w, "%s\t%s\n", name, value) }
	meta := metaReader{f}

	line("file", path)
	line("file size", bytesString(uint64(f.Size())))
	line("gguf version", strconv.Itoa(int(f.Version)))
	line("metadata keys", strconv.Itoa(len(f.KV)))
	line("name", meta.str("general.name"))
	arch, archErr := f.String("general.architecture")
	line("architecture", meta.str("general.architecture"))
	// Hyperparameters live under "<arch>."; without an architecture there is
	// no prefix to look them up by, so every one of them is absent (no file
	// has the empty key).
	k := func(suffix string) string {
		if archErr != nil {
			return ""
		}
		return arch + "." + suffix
	}

	line("layers", meta.uint(k("block_count")))
	line("embedding length", meta.uint(k("embedding_length")))
	line("feed-forward length", meta.uint(k("feed_forward_length")))
	line("attention heads", meta.uint(k("attention.head_count")))
	line("kv heads", meta.uint(k("attention.head_count_kv")))
	line("head dim", headDim(f, k))
	line("context length", meta.uint(k("context_length")))
	line("rms norm epsilon", meta.float(k("attention.layer_norm_rms_epsilon")))
	line("rope dimensions", meta.uint(k("rope.dimension_count")))
	line("rope freq base", meta.float(k("rope.freq_base")))
	line("rope scaling type", meta.str(k("rope.scaling.type")))
	line("rope scaling factor", meta.float(k("rope.scaling.factor")))
	line("rope original context", meta.uint(k("rope.scaling.original_context_length")))
	if t, ok := f.Tensor("rope_freqs.weight"); ok {
		line("rope frequency factors", fmt.Sprintf("rope_freqs.weight (%s %v)", t.Type, t.Dims))
	} else {
		line("rope frequency factors", "absent (no rope_freqs.weight)")
	}

	line("vocab size", vocabSize(f, k))
	model := meta.str("tokenizer.ggml.model")
	if s, err := f.String("tokenizer.ggml.model"); err == nil {
		if kind, ok := tokenizerKinds[s]; ok {
			model += " (" + kind + ")"
		}
	}
	line("tokenizer model", model)
	line("pre-tokenizer", meta.str("tokenizer.ggml.pre"))
	line("bos token id", meta.uint("tokenizer.ggml.bos_token_id"))
	line("eos token id", meta.uint("tokenizer.ggml.eos_token_id"))

	switch _, hasOutput := f.Tensor("output.weight"); {
	case hasOutput:
		line("output head", "separate (output.weight)")
	case len(f.Tensors) == 0:
		line("output head", "absent (no tensors)")
	default:
		line("output head", "tied (token_embd.weight, no output.weight)")
	}

	line("tensors", strconv.Itoa(len(f.Tensors)))
	type tally struct{ n, bytes uint64 }
	byType := map[quant.Type]*tally{}
	var total uint64
	for _, t := range f.Tensors {
		if byType[t.Type] == nil {
			byType[t.Type] = &tally{}
		}
		byType[t.Type].n++
		byType[t.Type].bytes += t.Size
		total += t.Size
	}
	types := make([]quant.Type, 0, len(byType))
	for t := range byType {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	for _, t := range types {
		line("  "+t.String(), fmt.Sprintf("%d tensors, %s", byType[t].n, bytesString(byType[t].bytes)))
	}
	line("tensor data", bytesString(total))
}

// tokenizerKinds names llama.cpp's tokenizer families by tokenizer.ggml.model.
var tokenizerKinds = map[string]string{
	"llama": "SPM", "gpt2": "BPE", "bert": "WPM", "t5": "UGM", "rwkv": "RWKV", "none": "no vocab",
}

func headDim(f *gguf.File, k func(string) string) string {
	if f.Has(k("attention.key_length")) {
		return metaReader{f}.uint(k("attention.key_length"))
	}
	embd, err1 := f.Uint64(k("embedding_length"))
	heads, err2 := f.Uint64(k("attention.head_count"))
	if err1 != nil || err2 != nil || heads == 0 {
		return "absent"
	}
	return fmt.Sprintf("%d (embedding_length / head_count)", embd/heads)
}

func vocabSize(f *gguf.File, k func(string) string) string {
	if n, err := f.ArrayLen("tokenizer.ggml.tokens"); err == nil {
		return fmt.Sprintf("%d (tokenizer.ggml.tokens)", n)
	}
	if n, err := f.Uint64(k("vocab_size")); err == nil {
		return fmt.Sprintf("%d (%s)", n, k("vocab_size"))
	}
	return "absent"
}

// metaReader formats metadata for display, saying "absent" or "invalid"
// instead of failing.
type metaReader struct{ f *gguf.File }

func show[T any](key string, get func(string) (T, error), format func(T) string) string {
	x, err := get(key)
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		return "absent"
	case err != nil:
		return "invalid (" + err.Error() + ")"
	}
	return format(x)
}

func (m metaReader) str(key string) string {
	return show(key, m.f.String, strconv.Quote)
}

func (m metaReader) uint(key string) string {
	return show(key, m.f.Uint64, func(x uint64) string { return strconv.FormatUint(x, 10) })
}

func (m metaReader) float(key string) string {
	return show(key, m.f.Float64, func(x float64) string {
		// Print an f32 as the shortest decimal that round-trips as f32.
		if v, _ := m.f.Lookup(key); v.Type() == gguf.TypeFloat32 {
			return strconv.FormatFloat(x, 'g', -1, 32)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	})
}

func listTensors(w io.Writer, f *gguf.File) error {
	rows := [][]string{{"name", "type", "shape", "file offset", "bytes"}}
	for _, t := range f.Tensors {
		dims := make([]string, len(t.Dims))
		for i, d := range t.Dims {
			dims[i] = strconv.FormatUint(d, 10)
		}
		rows = append(rows, []string{t.Name, t.Type.String(), "[" + strings.Join(dims, " ") + "]",
			strconv.FormatUint(f.DataOffset+t.Offset, 10), strconv.FormatUint(t.Size, 10)})
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		// Text columns to the left, numbers to the right.
		_, err := fmt.Fprintf(w, "%-*s  %-*s  %-*s  %*s  %*s\n",
			width[0], r[0], width[1], r[1], width[2], r[2], width[3], r[3], width[4], r[4])
		if err != nil {
			return err
		}
	}
	return nil
}

// bytesString writes n with thousands separators and, above a KiB, its size
// in binary units: "1,185,376 (1.1 MiB)".
func bytesString(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	b.WriteString(" bytes")
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	x, u := float64(n), -1
	for x >= 1024 && u < len(units)-1 {
		x /= 1024
		u++
	}
	if u >= 0 {
		fmt.Fprintf(&b, " (%.1f %s)", x, units[u])
	}
	return b.String()
}
