package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/requant"
)

func init() {
	commands.Add("quantize", "convert a GGUF model to another file type (Q4_K_M, Q8_0, F16, …)", runQuantize)
}

// quantizeWithLlamaCpp, when set by another file of this command, has the
// pinned llama.cpp quantize in to out (llama_model_quantize): the
// --with-llama.cpp option. It is nil until that is built in.
var quantizeWithLlamaCpp func(in, out string, ft ftype.FileType, threads int, stdout, stderr io.Writer) error

func runQuantize(args []string, stdout, stderr io.Writer) error {
	fs := cli.Flags("quantize", "usage: damascus quantize IN.gguf OUT.gguf --type T [--threads N] [--with-llama.cpp] [--dry-run]", stderr)
	typ := fs.String("type", "Q4_K_M", "file type: "+strings.Join(ftype.Names(), ", "))
	threads := cli.Threads(fs, "threads", runtime.NumCPU(), "goroutines quantizing each tensor")
	withLlama := fs.Bool("with-llama.cpp", false, "quantize with the pinned llama.cpp (llama_model_quantize) instead of our quantizer")
	dryRun := fs.Bool("dry-run", false, "print the type each tensor would get and write nothing")
	quiet := fs.Bool("quiet", false, "no progress bar")
	paths, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) != 2 && !(*dryRun && len(paths) == 1) {
		fs.Usage()
		return errUsage
	}
	ft, err := ftype.Parse(*typ)
	if err != nil {
		return err
	}
	if !*dryRun {
		// Before any work: a device, FIFO or the input itself is refused.
		if _, err := outfile.Check(paths[1], paths[0]); err != nil {
			return err
		}
	}
	if *withLlama {
		if quantizeWithLlamaCpp == nil {
			return fmt.Errorf("--with-llama.cpp is not available in this build")
		}
		return quantizeWithLlamaCpp(paths[0], paths[1], ft, *threads, stdout, stderr)
	}

	in, err := gguf.Open(paths[0])
	if err != nil {
		return err
	}
	defer in.Close()
	if *dryRun {
		plan, err := requant.Plan(in, ft)
		if err != nil {
			return err
		}
		for _, t := range plan {
			fmt.Fprintf(stdout, "%-32s %-6s -> %-6s %v\n", t.Name, t.From, t.To, t.Dims)
		}
		return nil
	}
	total, took, err := writeModel(stderr, *quiet, fmt.Sprintf("quantize %s", ft), paths[1], paths[:1],
		func(progress func(int64)) (*gguf.Writer, int64, error) {
			return requant.Convert(in, ft, max(*threads, 1), progress)
		})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %.1f MiB of tensors in %s\n", paths[1], ft, float64(total)/(1<<20), took)
	return nil
}
