package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama"
)

// `ledger batched` times aggregate decode over n streams decoding together
// (issue 21), Damascus's llama.Batch beside llama.cpp's multi-sequence
// llama_decode (llama-batched-bench's shape), the engines alternating
// within every round: each stream's prompt is prefilled in one step (its
// time is the time to first token), then, after warmSteps untimed, every
// step decodes one token of each stream.
func init() {
	commands.Define("batched", "aggregate decode tok/s of n streams together, Damascus beside llama.cpp, interleaved", "usage: ledger batched -m MODEL [--streams 1,2,4,8,16,32] [--rounds 3] [--prompt 32] [--steps 8] [--threads N] [-o FILE]", runBatched)
}

type batchedPoint struct {
	Streams  int
	Engine   string
	PrefillS []float64 // each round's prefill of every stream's prompt
	DecodeS  []float64 // each round's decode steps
	TokS     float64   // median aggregate decode tok/s
	TTFTms   float64   // median prefill time, ms
}

func runBatched(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var ff figureFlags
	ff.register(fs, "write the points as JSON to this `file`", "operator note recorded with the figures")
	streams := []int{1, 2, 4, 8, 16, 32}
	cli.IntListVar(fs, &streams, "streams", 1, 1024, "stream counts, comma-separated, each from 1 to 1024")
	rounds := cli.Int(fs, "rounds", 3, 1, 1000, "rounds, each timing every stream count on both engines")
	prompt := cli.Int(fs, "prompt", 32, 1, 4096, "prompt tokens per stream")
	steps := cli.Int(fs, "steps", 8, 1, 4096, "decode steps timed")
	threads := cli.Int(fs, "threads", 2, 1, llama.MaxThreads, "threads of each engine")
	ld, err := ff.parseAndLoad(fs, args)
	if err != nil {
		return err
	}
	defer ld.Close()
	lm, err := llamacpp.OpenModel(ff.model, llamacpp.ModelOptions{})
	if err != nil {
		return fmt.Errorf("llama.cpp: %w (run make baseline)", err)
	}
	defer lm.Close()
	vocab := ld.Model.Config.Vocab
	tok := func(s, i int) int32 { return int32((s*7919 + i*104729 + 17) % vocab) }
	nctx := *prompt + warmSteps + *steps + 1
	points := map[string]*batchedPoint{}
	point := func(n int, engine string) *batchedPoint {
		k := fmt.Sprint(n, engine)
		if points[k] == nil {
			points[k] = &batchedPoint{Streams: n, Engine: engine}
		}
		return points[k]
	}
	for r := range *rounds {
		for _, n := range streams {
			engines := []string{"damascus", "llama.cpp"}
			if r%2 == 1 {
				slices.Reverse(engines)
			}
			for _, e := range engines {
				var pre, dec time.Duration
				var err error
				if e == "damascus" {
					pre, dec, err = timeDamascus(ld.Model, n, *prompt, *steps, nctx, *threads, tok)
				} else {
					pre, dec, err = timeLlamaCpp(lm, n, *prompt, *steps, nctx, *threads, tok)
				}
				if err != nil {
					return fmt.Errorf("%s, %d streams: %w", e, n, err)
				}
				p := point(n, e)
				p.PrefillS, p.DecodeS = append(p.PrefillS, pre.Seconds()), append(p.DecodeS, dec.Seconds())
				fmt.Fprintf(stderr, "round %d, %d streams, %s: prefill %.0f ms, decode %.1f tok/s\n", r, n, e, 1000*pre.Seconds(), float64(n**steps)/dec.Seconds())
			}
		}
	}
	fmt.Fprintf(stdout, "| streams | damascus tok/s | llama.cpp tok/s | ratio | damascus TTFT ms | llama.cpp TTFT ms |\n|---|---|---|---|---|---|\n")
	var all []*batchedPoint
	for _, n := range streams {
		d, l := point(n, "damascus"), point(n, "llama.cpp")
		for _, p := range []*batchedPoint{d, l} {
			p.TokS = float64(n**steps) / median(p.DecodeS)
			p.TTFTms = 1000 * median(p.PrefillS)
			all = append(all, p)
		}
		fmt.Fprintf(stdout, "| %d | %.1f | %.1f | %.2f | %.0f | %.0f |\n", n, d.TokS, l.TokS, d.TokS/l.TokS, d.TTFTms, l.TTFTms)
	}
	return ff.writeFigures("batched", map[string]any{"threads": *threads, "rounds": *rounds, "prompt": *prompt, "steps": *steps,
		"llamacpp": llamacpp.PinnedCommit, "damascus_kv": "f32", "llamacpp_kv": "f32, unified, no flash attention", "points": all})
}

// warmSteps decode steps follow the prefill untimed: a fresh llama.cpp
// context's first decodes of a new batch shape allocate its graph (a first
// run took seconds a token without them).
const warmSteps = 2

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// timeDamascus prefills n streams' prompts in one Batch step, then times
// steps of one token per stream.
func timeDamascus(m *llama.Model, n, prompt, steps, nctx, threads int, tok func(s, i int) int32) (pre, dec time.Duration, err error) {
	b, err := m.NewBatch(llama.Options{NCtx: nctx, NBatch: max(n*prompt, n), Threads: threads}, n)
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	spans := make([]llama.Span, n)
	for s := range n {
		p := make([]int32, prompt)
		for i := range p {
			p[i] = tok(s, i)
		}
		spans[s] = llama.Span{Seq: s, Tokens: p, Logits: true}
	}
	return timePrefillDecode(steps, func() error {
		_, err := b.Step(spans)
		return err
	}, func(i int) error {
		for s := range n {
			spans[s].Tokens = []int32{tok(s, prompt+i)}
		}
		_, err := b.Step(spans)
		return err
	})
}

// timeLlamaCpp is timeDamascus on llama.cpp: one llama_decode of every
// prompt, then one of a token per sequence per step.
func timeLlamaCpp(m *llamacpp.Model, n, prompt, steps, nctx, threads int, tok func(s, i int) int32) (pre, dec time.Duration, err error) {
	b, err := m.NewBatched(n, n*nctx, threads)
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	var toks, pos, seq []int32
	var want []bool
	for s := range n {
		for i := range prompt {
			toks, pos, seq, want = append(toks, tok(s, i)), append(pos, int32(i)), append(seq, int32(s)), append(want, i == prompt-1)
		}
	}
	stoks, spos, sseq, swant := make([]int32, n), make([]int32, n), make([]int32, n), make([]bool, n)
	return timePrefillDecode(steps, func() error {
		return b.Decode(toks, pos, seq, want)
	}, func(i int) error {
		for s := range n {
			stoks[s], spos[s], sseq[s], swant[s] = tok(s, prompt+i), int32(prompt+i), int32(s), true
		}
		return b.Decode(stoks, spos, sseq, swant)
	})
}

// timePrefillDecode is the timing both engines get: prefill once (its time
// is pre), then warmSteps untimed decode steps and steps timed ones (their
// time is dec); step(i) runs decode step i, counting the untimed ones.
func timePrefillDecode(steps int, prefill func() error, step func(i int) error) (pre, dec time.Duration, err error) {
	t0 := time.Now()
	if err := prefill(); err != nil {
		return 0, 0, err
	}
	pre = time.Since(t0)
	for i := range warmSteps + steps {
		if i == warmSteps {
			t0 = time.Now()
		}
		if err := step(i); err != nil {
			return 0, 0, err
		}
	}
	return pre, time.Since(t0), nil
}
