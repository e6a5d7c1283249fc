package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama/quality"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

func init() {
	defineEngine("predict", "print the most likely next tokens after a text, with probabilities", "usage: damascus predict -m MODEL [--weights huge|mmap] [flags] TEXT", 0, runPredict)
}

func runPredict(fs *flag.FlagSet, ef *engineFlags, args []string, stdout, stderr io.Writer) error {
	k := cli.Int(fs, "k", 5, 1, cli.Unbounded, "how many tokens to list")
	rest, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 || *k <= 0 {
		fs.Usage()
		return errUsage
	}
	text := strings.Join(rest, " ")
	ids0, err := tokenCount(*ef, text)
	if err != nil {
		return err
	}
	ef.ctxSize = ids0
	e, err := ef.open(stderr)
	if err != nil {
		return err
	}
	defer e.close()
	ids, err := e.tok.Encode(text, tokenizer.AddSpecial)
	if err != nil {
		return err
	}
	logits, err := e.ctx.Eval(ids, false)
	if err != nil {
		return err
	}
	probs := quality.Probs(logits)
	order := make([]int, len(probs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case probs[a] > probs[b]:
			return -1
		case probs[a] < probs[b]:
			return 1
		}
		return 0
	})
	fmt.Fprintf(stderr, "%d prompt tokens\n", len(ids))
	for _, id := range order[:min(*k, len(order))] {
		piece, err := e.tok.Piece(int32(id), true)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%8d  %-20s %8.4f%%\n", id, strconv.Quote(string(piece)), 100*probs[id])
	}
	return nil
}

// tokenCount sizes the context to the text: encoding needs the vocabulary
// only, so the model's context is not allocated at its full length.
func tokenCount(ef engineFlags, text string) (int, error) {
	if ef.ctxSize > 0 {
		return ef.ctxSize, nil
	}
	return max(1, len(text)+2), nil // a token covers at least one byte; BOS and EOS at most
}
