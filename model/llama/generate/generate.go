// Package generate is the text-generation loop on top of a forward pass:
// prompt prefill, sampling, streamed UTF-8-safe output, stop tokens and stop
// strings, cancellation, and llama.cpp-style timing.
package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/model/tokenizer"
)

// Evaluator is a forward pass with a KV cache (llama.Context).
type Evaluator interface {
	Eval(tokens []int32, all bool) ([]float32, error)
	Pos() int
	NCtx() int
}

// Sampler picks the next token from logits.
type Sampler interface {
	Sample(logits []float32) int
}

// acceptor is implemented by samplers whose penalties need the context.
type acceptor interface{ Accept(token int) }

// Options control one generation.
type Options struct {
	MaxTokens int                 // tokens to generate at most (> 0)
	Stop      []string            // stop strings: output ends before the first one
	StopToken func(id int32) bool // tokens that end generation unprinted (EOS, EOT; BOS for llama2.c)
	Echo      bool                // write the prompt's text before the generated text
	Special   bool                // print control tokens' text
}

// Stats are the timings of one generation, as llama.cpp reports them.
type Stats struct {
	PromptTokens int
	PromptTime   time.Duration
	Tokens       int // generated tokens that were sampled (the stop token included)
	GenTime      time.Duration
	Reason       string // "length", "stop token", "stop string", "cancelled"
	Generated    []int32
}

// Summary formats the timings like llama.cpp's llama_perf_context_print.
func (s Stats) Summary() string {
	line := func(name string, d time.Duration, n int) string {
		ms := float64(d.Microseconds()) / 1000
		per, tps := 0.0, 0.0
		if n > 0 && d > 0 {
			per, tps = ms/float64(n), float64(n)/d.Seconds()
		}
		return fmt.Sprintf("%17s = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n", name, ms, n, per, tps)
	}
	return line("prompt eval time", s.PromptTime, s.PromptTokens) +
		line("eval time", s.GenTime, s.Tokens) +
		fmt.Sprintf("%17s = %10.2f ms / %5d tokens (stopped: %s)\n", "total time",
			float64((s.PromptTime+s.GenTime).Microseconds())/1000, s.PromptTokens+s.Tokens, s.Reason)
}

// Run evaluates prompt, then samples up to o.MaxTokens tokens, streaming
// their text to out. Cancelling ctx ends generation cleanly: Run returns the
// stats so far and a nil error.
func Run(ctx context.Context, m Evaluator, tok *tokenizer.Tokenizer, s Sampler, prompt []int32, o Options, out io.Writer) (Stats, error) {
	var st Stats
	if len(prompt) == 0 {
		return st, errors.New("empty prompt (not even BOS)")
	}
	if o.MaxTokens <= 0 {
		return st, fmt.Errorf("token count %d is not positive", o.MaxTokens)
	}
	// The last sampled token is never evaluated, hence the -1.
	if need := m.Pos() + len(prompt) + o.MaxTokens - 1; need > m.NCtx() {
		return st, fmt.Errorf("prompt of %d tokens (after %d cached) and %d generated need %d positions, more than the context length %d",
			len(prompt), m.Pos(), o.MaxTokens, need, m.NCtx())
	}
	dec := tok.NewStreamDecoder(o.Special)
	w := &stopWriter{out: out, stops: o.Stop}
	for _, id := range prompt {
		text, err := dec.Next(id)
		if err != nil {
			return st, err
		}
		if o.Echo {
			if _, err := io.WriteString(out, text); err != nil {
				return st, err
			}
		}
	}
	if acc, ok := s.(acceptor); ok {
		for _, id := range prompt {
			acc.Accept(int(id))
		}
	}

	start := time.Now()
	logits, err := m.Eval(prompt, false)
	if err != nil {
		return st, err
	}
	st.PromptTokens, st.PromptTime = len(prompt), time.Since(start)
	start = time.Now()
	for {
		if ctx.Err() != nil {
			st.Reason = "cancelled"
			break
		}
		next := int32(s.Sample(logits))
		st.Tokens++
		st.Generated = append(st.Generated, next)
		if o.StopToken != nil && o.StopToken(next) {
			st.Reason = "stop token"
			break
		}
		if acc, ok := s.(acceptor); ok {
			acc.Accept(int(next))
		}
		text, err := dec.Next(next)
		if err != nil {
			return st, err
		}
		stopped, err := w.write(text)
		if err != nil {
			return st, err
		}
		if stopped {
			st.Reason = "stop string"
			break
		}
		if st.Tokens == o.MaxTokens {
			st.Reason = "length"
			break
		}
		if logits, err = m.Eval([]int32{next}, false); err != nil {
			return st, err
		}
	}
	if st.Reason != "stop string" {
		if _, err := w.write(dec.Flush()); err != nil {
			return st, err
		}
		if err := w.flush(); err != nil {
			return st, err
		}
	}
	st.GenTime = time.Since(start)
	return st, nil
}

// stopWriter streams text but holds back any tail that could be the start of
// a stop string, so a stop string is never printed.
type stopWriter struct {
	out     io.Writer
	stops   []string
	pending string
}

// write adds text; it reports whether a stop string has appeared (the text
// before it is written, the rest dropped).
func (w *stopWriter) write(text string) (bool, error) {
	w.pending += text
	cut, found := len(w.pending), false
	for _, s := range w.stops {
		if i := strings.Index(w.pending, s); s != "" && i >= 0 && i < cut {
			cut, found = i, true
		}
	}
	if found {
		_, err := io.WriteString(w.out, w.pending[:cut])
		w.pending = ""
		return true, err
	}
	hold := 0
	for _, s := range w.stops {
		for k := min(len(s)-1, len(w.pending)); k > hold; k-- {
			if strings.HasSuffix(w.pending, s[:k]) {
				hold = k
				break
			}
		}
	}
	n := len(w.pending) - hold
	_, err := io.WriteString(w.out, w.pending[:n])
	w.pending = w.pending[n:]
	return false, err
}

func (w *stopWriter) flush() error {
	_, err := io.WriteString(w.out, w.pending)
	w.pending = ""
	return err
}
