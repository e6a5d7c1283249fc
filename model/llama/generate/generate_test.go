package generate

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/tokenizertest"
)

// script is an Evaluator whose logits make a greedy sampler emit a fixed
// token sequence.
type script struct {
	next  []int32
	vocab int
	pos   int
	nctx  int
	i     int
	buf   []float32
}

func (s *script) Eval(tokens []int32, _ bool) ([]float32, error) {
	s.pos += len(tokens)
	clear(s.buf)
	if s.i < len(s.next) {
		s.buf[s.next[s.i]] = 1
		s.i++
	}
	return s.buf, nil
}
func (s *script) Pos() int  { return s.pos }
func (s *script) NCtx() int { return s.nctx }

type argmax struct{}

func (argmax) Sample(l []float32) int {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return best
}

func stories(t *testing.T) *tokenizer.Tokenizer {
	return tokenizertest.Open(t, testdata.Stories260KGGUF.Require(t))
}

func TestStops(t *testing.T) {
	tok := stories(t)
	text, err := tok.Encode("Once upon a time, there was a dog.", 0)
	if err != nil {
		t.Fatal(err)
	}
	run := func(o Options, ctx context.Context) (string, Stats) {
		var out bytes.Buffer
		ev := &script{next: append(text, tok.EOS(), 5, 6), vocab: tok.NumTokens(), nctx: 512, buf: make([]float32, tok.NumTokens())}
		st, err := Run(ctx, ev, tok, argmax{}, []int32{tok.BOS()}, o, &out)
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), st
	}
	bg := context.Background()
	if got, st := run(Options{MaxTokens: 100, StopToken: tok.IsEOG}, bg); got != "Once upon a time, there was a dog." || st.Reason != "stop token" {
		t.Errorf("stop token: %q (%s)", got, st.Reason)
	}
	if got, st := run(Options{MaxTokens: 100, Stop: []string{"was a"}, StopToken: tok.IsEOG}, bg); got != "Once upon a time, there " || st.Reason != "stop string" {
		t.Errorf("stop string: %q (%s)", got, st.Reason)
	}
	if got, st := run(Options{MaxTokens: 3}, bg); st.Tokens != 3 || st.Reason != "length" || !strings.HasPrefix("Once upon a time", got) {
		t.Errorf("length: %q (%s, %d tokens)", got, st.Reason, st.Tokens)
	}
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	if got, st := run(Options{MaxTokens: 10}, cancelled); got != "" || st.Reason != "cancelled" {
		t.Errorf("cancelled: %q (%s)", got, st.Reason)
	}
	if !strings.Contains((Stats{PromptTokens: 4, Tokens: 2}).Summary(), "prompt eval time") {
		t.Error("summary lacks the prompt line")
	}
}

func TestContextCheck(t *testing.T) {
	tok := stories(t)
	ev := &script{nctx: 10, buf: make([]float32, tok.NumTokens())}
	_, err := Run(context.Background(), ev, tok, argmax{}, []int32{1, 2, 3}, Options{MaxTokens: 9}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "context length 10") {
		t.Errorf("3 prompt + 9 generated in 10: %v", err)
	}
}

// A stop string split across tokens is never partly printed.
func TestStopWriterHoldsPrefix(t *testing.T) {
	var out bytes.Buffer
	w := &stopWriter{out: &out, stops: []string{"END"}}
	for _, s := range []string{"abc E", "N", "D tail"} {
		stopped, err := w.write(s)
		if err != nil {
			t.Fatal(err)
		}
		if stopped {
			break
		}
	}
	if out.String() != "abc " {
		t.Errorf("got %q", out.String())
	}
}
