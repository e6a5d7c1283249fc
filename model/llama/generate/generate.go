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
	if len(prompt) > 0 && o.MaxTokens > 0 {
		// The last sampled token is never evaluated, hence the -1.
		if need := m.Pos() + len(prompt) + o.MaxTokens - 1; need > m.NCtx() {
			return Stats{}, fmt.Errorf("prompt of %d tokens (after %d cached) and %d generated need %d positions, more than the context length %d",
				len(prompt), m.Pos(), o.MaxTokens, need, m.NCtx())
		}
	}
	g, err := NewStream(tok, s, prompt, o, out)
	if err != nil {
		return Stats{}, err
	}
	start := time.Now()
	logits, err := m.Eval(prompt, false)
	if err != nil {
		return g.st, err
	}
	g.st.PromptTokens, g.st.PromptTime = len(prompt), time.Since(start)
	start = time.Now()
	for {
		if ctx.Err() != nil {
			if err := g.Cancel(); err != nil {
				return g.st, err
			}
			break
		}
		next, more, err := g.Next(logits)
		if err != nil {
			return g.st, err
		}
		if !more {
			break
		}
		if logits, err = m.Eval([]int32{next}, false); err != nil {
			return g.st, err
		}
	}
	g.st.GenTime = time.Since(start)
	return g.st, nil
}

// A Stream is one generation after its prompt, driven by whoever evaluates
// the model (Run, or a server stepping many streams at once): Next samples
// from the last evaluated token's logits and says which token to evaluate
// next, until a stop token, a stop string or MaxTokens ends it.
type Stream struct {
	tok *tokenizer.Tokenizer
	s   Sampler
	o   Options
	dec *tokenizer.StreamDecoder
	w   *stopWriter
	st  Stats
}

// NewStream starts a generation after prompt (all of it, cached or not: the
// decoder's state and the penalties' history): its text is written to out
// with o.Echo.
func NewStream(tok *tokenizer.Tokenizer, s Sampler, prompt []int32, o Options, out io.Writer) (*Stream, error) {
	if len(prompt) == 0 {
		return nil, errors.New("empty prompt (not even BOS)")
	}
	if o.MaxTokens <= 0 {
		return nil, fmt.Errorf("token count %d is not positive", o.MaxTokens)
	}
	g := &Stream{tok: tok, s: s, o: o, dec: tok.NewStreamDecoder(o.Special), w: &stopWriter{out: out, stops: o.Stop}}
	for _, id := range prompt {
		text, err := g.dec.Next(id)
		if err != nil {
			return nil, err
		}
		if o.Echo {
			if _, err := io.WriteString(out, text); err != nil {
				return nil, err
			}
		}
	}
	if acc, ok := s.(acceptor); ok {
		for _, id := range prompt {
			acc.Accept(int(id))
		}
	}
	return g, nil
}

// Next samples a token from logits and writes its text. more says the
// stream goes on with next evaluated; else Stats says why it ended.
func (g *Stream) Next(logits []float32) (next int32, more bool, err error) {
	next = int32(g.s.Sample(logits))
	if e, ok := g.s.(interface{ Err() error }); ok && e.Err() != nil {
		return next, false, e.Err() // a constraint allows nothing: stop rather than go on unconstrained
	}
	g.st.Tokens++
	g.st.Generated = append(g.st.Generated, next)
	if g.o.StopToken != nil && g.o.StopToken(next) {
		return next, false, g.end("stop token")
	}
	if acc, ok := g.s.(acceptor); ok {
		acc.Accept(int(next))
	}
	text, err := g.dec.Next(next)
	if err != nil {
		return next, false, err
	}
	stopped, err := g.w.write(text)
	if err != nil {
		return next, false, err
	}
	if stopped {
		g.st.Reason = "stop string"
		return next, false, nil
	}
	if g.st.Tokens == g.o.MaxTokens {
		return next, false, g.end("length")
	}
	return next, true, nil
}

// Cancel ends the stream before its end ("cancelled"), writing the text held back.
func (g *Stream) Cancel() error { return g.end("cancelled") }

// Stats are the stream's tokens and why it ended (no timings: Run's).
func (g *Stream) Stats() Stats { return g.st }

// end records why the stream ended and writes out what the decoder and the
// stop strings held back.
func (g *Stream) end(reason string) error {
	g.st.Reason = reason
	if _, err := g.w.write(g.dec.Flush()); err != nil {
		return err
	}
	return g.w.flush()
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
