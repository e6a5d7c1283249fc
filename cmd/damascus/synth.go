package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
)

func init() {
	commands.Add("synth", "make a synthetic Llama 3.2 GGUF (real tokenizer, pseudo-random weights)", runSynth)
}

func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := cli.Flags("synth", "usage: damascus synth --preset P --type T [--seed S] -o FILE", stderr)
	var names []string
	for _, p := range synth.Presets() {
		names = append(names, p.Name)
	}
	preset := fs.String("preset", "tiny", "model shape: "+strings.Join(names, ", "))
	typ := fs.String("type", "Q4_K_M", "file type: "+strings.Join(ftype.Names(), ", "))
	seed := fs.Uint64("seed", 1, "seed of the pseudo-random weights")
	out := fs.String("o", "", "output `FILE` (required)")
	threads := cli.Threads(fs, "threads", runtime.NumCPU(), "goroutines generating each tensor")
	tokJSON := fs.String("tokenizer", "", "Llama 3 tokenizer.json[.gz] (default: the shared test data)")
	tmpl := fs.String("chat-template", "", "chat template file (default: the shared Llama 3.2 template)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	// Before any work: a device or FIFO at -o is refused.
	if _, err := outfile.Check(*out, *tokJSON, *tmpl); err != nil {
		return err
	}
	p, err := synth.LookupPreset(*preset)
	if err != nil {
		return err
	}
	ft, err := ftype.Parse(*typ)
	if err != nil {
		return err
	}
	if (*tokJSON == "") != (*tmpl == "") {
		return fmt.Errorf("--tokenizer and --chat-template go together")
	}
	var vocab *llama3vocab.Vocab
	if *tokJSON != "" {
		vocab, err = llama3vocab.LoadFiles(*tokJSON, *tmpl)
	} else {
		vocab, err = llama3vocab.Load()
	}
	if err != nil {
		return err
	}
	if vocab.Source != "" {
		fmt.Fprintf(stderr, "tokenizer: %s\n", vocab.Source)
	}

	total, took, err := writeModel(stderr, *quiet, fmt.Sprintf("%s %s", p.Name, ft), *out, []string{*tokJSON, *tmpl},
		func(progress func(int64)) (*gguf.Writer, int64, error) {
			return synth.Build(synth.Options{
				Preset: p, Type: ft, Seed: *seed, Tokenizer: vocab.Metadata(),
				Workers: max(*threads, 1), Progress: progress,
			})
		})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s, seed %d, %.1f MiB of tensors in %s\n",
		*out, p.Name, ft, *seed, float64(total)/(1<<20), took)
	return nil
}

// writeModel is how quantize and synth make a file: build the model
// (reporting tensor bytes to progress), write it to out (which must not be
// one of inputs), with a bar over the bytes on stderr unless quiet. It
// returns the tensor bytes and the time taken, to the millisecond.
func writeModel(stderr io.Writer, quiet bool, desc, out string, inputs []string,
	build func(progress func(int64)) (*gguf.Writer, int64, error)) (total int64, took time.Duration, err error) {
	start := time.Now()
	bar := newBytesBar(stderr, quiet, desc)
	w, total, err := build(bar.add)
	if err != nil {
		return 0, 0, err
	}
	bar.start(total)
	if err := w.WriteFile(out, inputs...); err != nil {
		return 0, 0, err
	}
	bar.finish()
	return total, time.Since(start).Round(time.Millisecond), nil
}

// A bytesBar is a progress report over bytes on stderr (cli.Progress), or
// nothing when quiet.
type bytesBar struct {
	w     io.Writer
	quiet bool
	desc  string
	p     *cli.Progress
}

func newBytesBar(w io.Writer, quiet bool, desc string) *bytesBar {
	return &bytesBar{w: w, quiet: quiet, desc: desc}
}

func (b *bytesBar) start(total int64) {
	if !b.quiet {
		b.p = cli.NewProgress(b.w, total, b.desc, true)
	}
}

func (b *bytesBar) add(n int64) {
	if b.p != nil {
		b.p.Add(n)
	}
}

func (b *bytesBar) finish() {
	if b.p != nil {
		b.p.Finish()
	}
}
