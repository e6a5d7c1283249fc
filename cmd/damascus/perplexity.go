package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama/quality"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

func init() {
	defineEngine("perplexity", "perplexity on a text (llama.cpp's protocol); with --base, the KL divergence from another model", "usage: damascus perplexity -m MODEL --file TEXT [--ctx-size N] [--base BASE_MODEL] [--weights huge|mmap]", 512, runPerplexity)
}

func runPerplexity(fs *flag.FlagSet, ef *engineFlags, args []string, stdout, stderr io.Writer) error {
	file := fs.String("file", "", "text `file` to score")
	base := fs.String("base", "", "base model `file`: also report KL(base ‖ model) per position (same vocabulary)")
	if err := cli.ParseInterspersedNoArgs(fs, args); err != nil {
		return err
	}
	if *file == "" {
		fs.Usage()
		return errUsage
	}
	text, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	e, err := ef.open(stderr)
	if err != nil {
		return err
	}
	defer e.close()
	chunks, err := perplexityChunks(e, string(text), e.ctx.NCtx())
	if err != nil {
		return err
	}
	V := e.model.Config.Vocab
	if *base == "" {
		fmt.Fprintf(stderr, "perplexity: %d tokens, %d chunks of %d\n", len(chunks.Tokens), chunks.N(), chunks.NCtx)
		r, err := quality.Perplexity(chunks, V, e.evaluate, func(i int, ppl float64) {
			fmt.Fprintf(stderr, "[%d]%.4f,", i+1, ppl)
		})
		fmt.Fprintln(stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "PPL = %.4f +/- %.5f (%d tokens scored)\n", r.PPL, r.StdErr, r.Count)
		return nil
	}
	bf := *ef
	bf.model = *base
	b, err := bf.open(stderr)
	if err != nil {
		return fmt.Errorf("base model: %w", err)
	}
	defer b.close()
	if b.model.Config.Vocab != V {
		return fmt.Errorf("vocabularies differ: %d tokens in the base, %d in the model", b.model.Config.Vocab, V)
	}
	r, err := quality.KLDivergence(chunks, V, b.evaluate, e.evaluate)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "positions         %d (%d chunks of %d, second halves)\n", r.Positions, chunks.N(), chunks.NCtx)
	fmt.Fprintf(stdout, "PPL(base)         %.4f\n", r.Base.PPL)
	fmt.Fprintf(stdout, "PPL(model)        %.4f\n", r.Test.PPL)
	fmt.Fprintf(stdout, "mean KLD          %.6f +/- %.6f\n", r.MeanKLD, r.KLDStdErr)
	fmt.Fprintf(stdout, "median KLD        %.6f\n", r.MedianKLD)
	fmt.Fprintf(stdout, "99th pct KLD      %.6f\n", r.P99KLD)
	fmt.Fprintf(stdout, "max KLD           %.6f\n", r.MaxKLD)
	fmt.Fprintf(stdout, "same top-1        %.3f%%\n", 100*r.SameTop1)
	fmt.Fprintf(stdout, "RMS Δp            %.3f%%\n", 100*r.RMSDeltaP)
	return nil
}

// perplexityChunks tokenizes text as llama-perplexity does (special tokens
// added as the vocabulary asks) into chunks of nCtx.
func perplexityChunks(e *engine, text string, nCtx int) (quality.Chunks, error) {
	if e.tok.AddEOS() {
		return quality.Chunks{}, errors.New("the vocabulary appends EOS, which llama.cpp's perplexity refuses")
	}
	ids, err := e.tok.Encode(text, tokenizer.AddSpecial)
	if err != nil {
		return quality.Chunks{}, err
	}
	bos := int32(-1)
	if e.tok.AddBOS() {
		bos = e.tok.BOS()
	}
	c := quality.Chunks{Tokens: ids, NCtx: nCtx, BOS: bos}
	return c, c.Check()
}

// evaluate runs a fresh sequence through the production context.
func (e *engine) evaluate(tokens []int32, from int) ([]float32, error) {
	if err := e.ctx.Truncate(0); err != nil {
		return nil, err
	}
	logits, err := e.ctx.Eval(tokens, true)
	if err != nil {
		return nil, err
	}
	return logits[from*e.model.Config.Vocab:], nil
}
