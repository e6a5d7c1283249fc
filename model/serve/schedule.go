package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/llama/generate"
	"github.com/damascus-llm/damascus/model/sample"
)

// A task is a request in the scheduler's hands. The scheduler writes its
// text and result; the request's handler takes them when notified.
type task struct {
	job     *job
	ctx     context.Context // the request's: done when the client leaves
	sampler *sample.Sampler
	notify  chan struct{} // one pending signal at most: text or the end

	mu    sync.Mutex
	text  strings.Builder // generated, not yet taken
	lps   []tokenLogprob  // the generated tokens' log-probabilities, not yet taken (job.logprobs)
	done  bool
	stats generate.Stats // once done
	err   error          // once done: generation failed

	// Timings, written by the scheduler before end: the prompt tokens
	// taken from the slot's cache and evaluated, when the task took its
	// slot, when its first token was drawn and when it ended.
	cacheN, promptN              int
	admitted, firstDraw, endTime time.Time
}

// Write is the generated text, from the scheduler's goroutine.
func (t *task) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.text.Write(p)
	t.mu.Unlock()
	t.signal()
	return len(p), nil
}

func (t *task) signal() {
	select {
	case t.notify <- struct{}{}:
	default: // a signal is pending already
	}
}

// end finishes the task.
func (t *task) end(st generate.Stats, err error) {
	t.mu.Lock()
	t.stats, t.err, t.done, t.endTime = st, err, true, time.Now()
	t.mu.Unlock()
	t.signal()
}

// addLogprob records a generated token's log-probabilities, from the
// scheduler's goroutine.
func (t *task) addLogprob(e tokenLogprob) {
	t.mu.Lock()
	t.lps = append(t.lps, e)
	t.mu.Unlock()
	t.signal()
}

// take returns the text and log-probabilities since the last take and
// whether the task is done.
func (t *task) take() (string, []tokenLogprob, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, lps := t.text.String(), t.lps
	t.text.Reset()
	t.lps = nil
	return s, lps, t.done
}

// slot is one sequence of the model and the request it serves.
type slot struct {
	cached []int32 // the tokens in its KV cache, in order
	t      *task   // nil: free
	gen    *generate.Stream
	feed   []int32 // tokens to evaluate next: the prompt's rest, or the last sampled token
	filled bool    // the prompt is evaluated: feed is one decode token
}

// scheduler runs the slots' steps on one goroutine, started when a task
// arrives and ended when no slot is busy and none waits (nothing lingers
// between bursts of requests). Each step takes every decoding slot's next
// token, then prefill chunks of the others, up to the engine's NBatch
// tokens; new tasks join between steps, and a cancelled task's slot is
// freed before the next step.
type scheduler struct {
	s       *Server
	mu      sync.Mutex // guards pending and running
	pending []*task
	running bool

	slots []slot       // the scheduler goroutine's alone
	spans []llama.Span // a step's, reused
	owner []int        // each span's slot
	order []int        // busy slots in the order they joined
}

func (sc *scheduler) init(s *Server) {
	sc.s = s
	sc.slots = make([]slot, s.eng.Seqs())
}

// submit queues t for a slot. Its handler holds a slot token, so a slot
// is free for it once the tasks before it are placed.
func (sc *scheduler) submit(t *task) {
	sc.mu.Lock()
	sc.pending = append(sc.pending, t)
	if !sc.running {
		sc.running = true
		go sc.loop()
	}
	sc.mu.Unlock()
}

func (sc *scheduler) loop() {
	for {
		sc.mu.Lock()
		for _, t := range sc.pending {
			sc.admit(t)
		}
		sc.pending = sc.pending[:0]
		if len(sc.order) == 0 {
			sc.running = false
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
		sc.step()
	}
}

// admit places t in the free slot whose cache shares the longest prefix
// with its prompt, and keeps that prefix.
func (sc *scheduler) admit(t *task) {
	best, keep := -1, -1
	for i := range sc.slots {
		if sc.slots[i].t == nil {
			if n := commonPrefix(sc.slots[i].cached, t.job.prompt); n > keep {
				best, keep = i, n
			}
		}
	}
	if best < 0 {
		sc.refuse(t, errors.New("no free slot: the server's slot accounting is broken"))
		return
	}
	sl := &sc.slots[best]
	p := t.job.prompt
	if keep == len(p) {
		keep-- // one token must be evaluated for its logits
	}
	if err := sc.s.eng.Truncate(best, keep); err != nil {
		sl.cached = sl.cached[:0]
		sc.refuse(t, fmt.Errorf("slot %d: %w", best, err))
		return
	}
	tok := sc.s.cfg.Tokenizer
	gen, err := generate.NewStream(tok, t.sampler, p, generate.Options{MaxTokens: t.job.max, Stop: t.job.stops, StopToken: tok.IsEOG}, t)
	if err != nil {
		sc.refuse(t, err)
		return
	}
	*sl = slot{cached: sl.cached[:keep], t: t, gen: gen, feed: p[keep:]}
	t.cacheN, t.promptN, t.admitted = keep, len(p)-keep, time.Now()
	sc.order = append(sc.order, best)
	sc.s.metrics.cachedTokens.Add(int64(keep))
	sc.s.metrics.busy.Add(1)
}

// refuse ends a task that could not take a slot.
func (sc *scheduler) refuse(t *task, err error) {
	sc.s.metrics.requests.Add(1)
	t.end(generate.Stats{}, err)
}

// free ends slot i's task and takes the slot out of the step order.
func (sc *scheduler) free(i int, err error) {
	sl := &sc.slots[i]
	st := sl.gen.Stats()
	sc.s.metrics.predicted.Add(int64(st.Tokens))
	sc.s.metrics.requests.Add(1)
	sc.s.metrics.busy.Add(-1)
	sl.t.end(st, err)
	sl.t, sl.gen, sl.feed = nil, nil, nil
	for k, j := range sc.order {
		if j == i {
			sc.order = append(sc.order[:k], sc.order[k+1:]...)
			break
		}
	}
}

// step runs one step of the busy slots.
func (sc *scheduler) step() {
	for _, i := range append([]int(nil), sc.order...) {
		if sl := &sc.slots[i]; sl.t.ctx.Err() != nil {
			sc.free(i, sl.gen.Cancel())
		}
	}
	sc.spans, sc.owner = sc.spans[:0], sc.owner[:0]
	room := sc.s.eng.NBatch()
	for _, decode := range []bool{true, false} { // decode tokens first: they keep streams moving
		for _, i := range sc.order {
			sl := &sc.slots[i]
			if sl.filled != decode || room == 0 {
				continue
			}
			k := min(len(sl.feed), room)
			sc.spans = append(sc.spans, llama.Span{Seq: i, Tokens: sl.feed[:k], Logits: k == len(sl.feed)})
			sc.owner = append(sc.owner, i)
			room -= k
		}
	}
	if len(sc.spans) == 0 {
		return
	}
	prompt, decode := 0, 0
	for k, sp := range sc.spans {
		if sc.slots[sc.owner[k]].filled {
			decode += len(sp.Tokens)
		} else {
			prompt += len(sp.Tokens)
		}
	}
	t0 := time.Now()
	logits, err := sc.s.eng.Step(sc.spans)
	sc.s.metrics.step(prompt, decode, time.Since(t0))
	if err != nil {
		for _, i := range sc.owner {
			sc.free(i, err)
		}
		return
	}
	// Sampling (a sort of the vocabulary for top-k) is per slot and
	// independent: the slots' draws run at once, their results in order.
	type draw struct {
		i    int
		row  []float32
		next int32
		more bool
		err  error
	}
	draws := make([]draw, 0, len(sc.spans))
	V, r := sc.s.cfg.Vocab, 0
	for k, sp := range sc.spans {
		i := sc.owner[k]
		sl := &sc.slots[i]
		sl.cached = append(sl.cached, sp.Tokens...)
		sl.feed = sl.feed[len(sp.Tokens):]
		if sp.Logits {
			if sl.t.firstDraw.IsZero() {
				sl.t.firstDraw = time.Now()
			}
			draws = append(draws, draw{i: i, row: logits[r*V : (r+1)*V]})
			r++
		}
	}
	var wg sync.WaitGroup
	for k := range draws {
		d := &draws[k]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl := &sc.slots[d.i]
			d.next, d.more, d.err = sl.gen.Next(d.row)
			// Every sampled token's log-probability but a stop token's,
			// which ends the answer unprinted.
			if j := sl.t.job; j.logprobs && d.err == nil && (d.more || sl.gen.Stats().Reason != "stop token") {
				sl.t.addLogprob(logprobsOf(d.row, d.next, j.top))
			}
		}()
	}
	wg.Wait()
	for _, d := range draws {
		if d.err != nil || !d.more {
			sc.free(d.i, d.err)
			continue
		}
		sc.slots[d.i].feed, sc.slots[d.i].filled = []int32{d.next}, true
	}
}

// oneSlot is a Context as one slot: a step is one Eval, the whole prompt
// at once (Eval batches it), the single-token decode through the matvec.
type oneSlot struct{ c Evaluator }

func (o oneSlot) Seqs() int                   { return 1 }
func (o oneSlot) NCtx() int                   { return o.c.NCtx() }
func (o oneSlot) NBatch() int                 { return o.c.NCtx() }
func (o oneSlot) Pos(int) int                 { return o.c.Pos() }
func (o oneSlot) Truncate(_ int, n int) error { return o.c.Truncate(n) }
func (o oneSlot) Step(spans []llama.Span) ([]float32, error) {
	if len(spans) != 1 {
		return nil, fmt.Errorf("one slot, %d spans", len(spans))
	}
	return o.c.Eval(spans[0].Tokens, false)
}

// timings is llama-server's "timings" of a finished task: the prompt's
// evaluated tokens (cache_n more came from the slot's cache) from taking
// the slot to the first draw, the generated ones from there to the end.
func (t *task) timings(generated int) map[string]any {
	if t.firstDraw.IsZero() {
		return nil
	}
	rate := func(n int, d time.Duration) (ms, perToken, perSecond float64) {
		ms = float64(d.Microseconds()) / 1000
		if n > 0 && ms > 0 {
			perToken, perSecond = ms/float64(n), float64(n)*1000/ms
		}
		return
	}
	pms, ppt, pps := rate(t.promptN, t.firstDraw.Sub(t.admitted))
	gms, gpt, gps := rate(generated, t.endTime.Sub(t.firstDraw))
	return map[string]any{"cache_n": t.cacheN,
		"prompt_n": t.promptN, "prompt_ms": pms, "prompt_per_token_ms": ppt, "prompt_per_second": pps,
		"predicted_n": generated, "predicted_ms": gms, "predicted_per_token_ms": gpt, "predicted_per_second": gps}
}
