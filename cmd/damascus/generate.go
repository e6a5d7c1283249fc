package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/jsonmode"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/llama/generate"
	"github.com/damascus-llm/damascus/model/sample"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/quant"
)

func init() {
	defineEngine("generate", "generate text from a prompt (only the text on stdout, timings on stderr)", "usage: damascus generate -m MODEL [-p PROMPT] [-n N] [--weights huge|mmap] [flags]", 4096, runGenerate)
}

// engineFlags are the flags every command that runs the model shares.
type engineFlags struct {
	model   string
	threads int
	ctxSize int
	batch   int
	kvType  string
	weights string
	device  string
}

// defineEngine registers a subcommand that runs the model: its flag set
// carries the engine flags (--ctx-size defaulting to defaultCtx) before
// run declares its own and parses them.
func defineEngine(name, summary, usage string, defaultCtx int, run func(fs *flag.FlagSet, ef *engineFlags, args []string, stdout, stderr io.Writer) error) {
	commands.Define(name, summary, usage, func(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
		var ef engineFlags
		ef.register(fs, defaultCtx)
		return run(fs, &ef, args, stdout, stderr)
	})
}

func (e *engineFlags) register(fs *flag.FlagSet, defaultCtx int) {
	fs.StringVar(&e.model, "m", "", "model `file` (GGUF)")
	cli.ThreadsVar(fs, &e.threads, "threads", 0, "worker threads (0: all cores)")
	cli.IntVar(fs, &e.ctxSize, "ctx-size", defaultCtx, 0, math.MaxInt32, "context length in tokens (0: the model's, capped by its metadata)")
	cli.IntVar(fs, &e.batch, "batch-size", 0, 0, math.MaxInt32, "most prompt tokens per prefill step (0: 512 on the CPU, 1024 with --device cuda)")
	fs.StringVar(&e.kvType, "kv-type", "f32", "KV cache type: f32, f16 or bf16 (each with the roundings llama.cpp applies to that cache type; bf16 prefills on AMX-BF16 where present)")
	fs.StringVar(&e.device, "device", llama.DeviceCPU, "where the model runs: cpu, or cuda (the GPU: weights uploaded once, f32 KV cache)")
	fs.StringVar(&e.weights, "weights", string(llama.DefaultPlacement),
		"where the weights live: huge (copied onto transparent huge pages, the file map released; mmap, with a notice, where huge pages are unavailable) or mmap (in place in the file map)")
}

// engine is an open model: weights, tokenizer and a production context.
type engine struct {
	ld    *llama.Loaded
	model *llama.Model
	tok   *tokenizer.Tokenizer
	ctx   *llama.Context // or, opened by openBatch, batch
	batch *llama.Batch
}

// open loads the model; a fallback from huge pages to the file map is told
// in one line on stderr.
func (e *engineFlags) open(stderr io.Writer) (*engine, error) { return e.openSeqs(stderr, 0) }

// openBatch is open with a Batch of seqs sequences instead of a Context,
// the context length shared among them as llama.cpp's server does.
func (e *engineFlags) openBatch(stderr io.Writer, seqs int) (*engine, error) {
	return e.openSeqs(stderr, seqs)
}

// openSeqs opens a Context (seqs 0) or a Batch of seqs sequences.
func (e *engineFlags) openSeqs(stderr io.Writer, seqs int) (*engine, error) {
	if e.model == "" {
		return nil, errors.New("no model: pass -m MODEL.gguf")
	}
	kv, err := quant.ParseType(strings.ToUpper(e.kvType))
	if err != nil || (kv != quant.F32 && kv != quant.F16 && kv != quant.BF16) {
		return nil, fmt.Errorf("--kv-type %q: want f32, f16 or bf16", e.kvType)
	}
	place, err := llama.ParsePlacement(e.weights)
	if err != nil {
		return nil, fmt.Errorf("--weights: %w", err)
	}
	ld, err := llama.Load(e.model, llama.LoadOptions{Placement: place, Device: e.device})
	if err != nil {
		return nil, err
	}
	if ld.Placed.Notice != "" {
		fmt.Fprintln(stderr, ld.Placed.Notice)
	}
	m := ld.Model
	nctx := e.ctxSize
	if nctx <= 0 || nctx > m.Config.ContextLength {
		nctx = m.Config.ContextLength
	}
	opts := llama.Options{NCtx: nctx, NBatch: e.batch, Threads: e.threads, KVType: kv, Device: e.device}
	if seqs > 0 {
		if nctx/seqs < 2 {
			ld.Close()
			return nil, fmt.Errorf("a context of %d tokens shared by %d slots leaves %d each: raise --ctx-size", nctx, seqs, nctx/seqs)
		}
		opts.NCtx = nctx / seqs
		b, err := m.NewBatch(opts, seqs)
		if err != nil {
			ld.Close()
			return nil, err
		}
		return &engine{ld: ld, model: m, tok: ld.Tokenizer, batch: b}, nil
	}
	c, err := m.NewContext(opts)
	if err != nil {
		ld.Close()
		return nil, err
	}
	return &engine{ld: ld, model: m, tok: ld.Tokenizer, ctx: c}, nil
}

func (e *engine) close() {
	if e.batch != nil {
		e.batch.Close()
	} else {
		e.ctx.Close()
	}
	e.ld.Close()
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// samplerFlags are the sampling flags of generate and chat.
type samplerFlags struct {
	p       sample.Params
	seed    int64
	llama2c bool
}

func (s *samplerFlags) register(fs *flag.FlagSet) {
	d := sample.DefaultParams()
	inf := math.Inf(1)
	cli.Float32Var(fs, &s.p.Temperature, "temp", d.Temperature, 0, inf, "temperature (0: greedy)")
	cli.IntVar(fs, &s.p.TopK, "top-k", d.TopK, 0, cli.Unbounded, "top-k sampling (0: off)")
	cli.Float32Var(fs, &s.p.TopP, "top-p", d.TopP, 0, 1, "top-p (nucleus) sampling (1: off)")
	cli.Float32Var(fs, &s.p.MinP, "min-p", d.MinP, 0, 1, "min-p sampling (0: off)")
	cli.Float32Var(fs, &s.p.RepeatPenalty, "repeat-penalty", d.RepeatPenalty, 0, inf, "penalty for repeated tokens (1: off)")
	cli.IntVar(fs, &s.p.PenaltyLastN, "repeat-last-n", d.PenaltyLastN, -1, cli.Unbounded, "tokens the penalties look back over (-1: all)")
	cli.Float32Var(fs, &s.p.FrequencyPenalty, "frequency-penalty", 0, -inf, inf, "subtracted per occurrence (0: off)")
	cli.Float32Var(fs, &s.p.PresencePenalty, "presence-penalty", 0, -inf, inf, "subtracted once if present (0: off)")
	fs.Int64Var(&s.seed, "seed", -1, "RNG seed (-1: from the clock, printed on stderr)")
	fs.BoolVar(&s.llama2c, "llama2c", false, "llama2.c run.c compatibility: its xorshift64* sampler (--temp, --top-p, --seed only), stop at BOS")
}

// build returns the sampler and the predicate of tokens that end generation.
// vocab is the model's (its logits' length), which may exceed the tokenizer's.
func (s *samplerFlags) build(tok *tokenizer.Tokenizer, vocab int, stderr io.Writer) (generate.Sampler, func(int32) bool, error) {
	if s.seed < 0 {
		s.seed = time.Now().UnixNano() & (1<<62 - 1)
		if s.p.Temperature > 0 {
			fmt.Fprintf(stderr, "seed: %d\n", s.seed)
		}
	}
	s.p.Seed = uint64(s.seed)
	if s.llama2c {
		bos := tok.BOS()
		return sample.NewLlama2C(vocab, s.p.Temperature, s.p.TopP, s.p.Seed),
			func(id int32) bool { return id == bos }, nil
	}
	smp, err := sample.New(vocab, s.p)
	if err != nil {
		return nil, nil, err
	}
	return smp, tok.IsEOG, nil
}

func runGenerate(fs *flag.FlagSet, ef *engineFlags, args []string, stdout, stderr io.Writer) error {
	var sf samplerFlags
	sf.register(fs)
	prompt := fs.String("p", "", "prompt (BOS is added as the vocabulary asks)")
	n := cli.Int(fs, "n", 128, 1, cli.Unbounded, "tokens to generate")
	echo := fs.Bool("echo", false, "print the prompt before the generated text")
	asJSON := fs.Bool("json", false, "constrain the generated text to one JSON object (the API's response_format json_object)")
	schemaText := fs.String("json-schema", "", "constrain the generated text to be valid under this JSON `schema` (the subset model/jsonmode supports)")
	var stops stringList
	fs.Var(&stops, "stop", "stop `string` (repeatable); output ends before it")
	if err := cli.ParseInterspersedNoArgs(fs, args); err != nil {
		return err
	}
	e, err := ef.open(stderr)
	if err != nil {
		return err
	}
	defer e.close()
	ids, err := e.tok.Encode(*prompt, tokenizer.AddSpecial)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("the prompt is empty and the vocabulary adds no BOS: nothing to start from")
	}
	smp, stop, err := sf.build(e.tok, e.model.Config.Vocab, stderr)
	if err != nil {
		return err
	}
	if *asJSON || *schemaText != "" {
		s, ok := smp.(*sample.Sampler)
		if !ok {
			return errors.New("--json and --json-schema constrain llama.cpp's sampler chain, not --llama2c's")
		}
		table := jsonmode.NewTable(e.tok, e.model.Config.Vocab)
		if *schemaText != "" {
			sch, err := jsonmode.CompileSchema([]byte(*schemaText))
			if err != nil {
				return fmt.Errorf("--json-schema: %w", err)
			}
			s.SetConstraint(table.NewSchema(sch))
		} else {
			s.SetConstraint(table.New())
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	st, err := generate.Run(ctx, e.ctx, e.tok, smp, ids,
		generate.Options{MaxTokens: *n, Stop: stops, StopToken: stop, Echo: *echo}, stdout)
	fmt.Fprintln(stderr)
	fmt.Fprint(stderr, st.Summary())
	return err
}
