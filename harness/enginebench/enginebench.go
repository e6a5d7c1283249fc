// Package enginebench measures the Damascus engine the way llama-bench
// measures llama.cpp (harness/llamacpp.Bench), so the two can be compared
// test for test: each ppN or tgN test gets a fresh context, an untimed
// warmup (the whole prompt, or one generated token), then timed repetitions
// from an empty cache; random prompt tokens from a seeded generator, the
// first one BOS. Model loading is timed separately.
package enginebench

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/quant"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
)

// Config is one bench run. Zero values take llama-bench's defaults.
type Config struct {
	Model    string `json:"model"`
	Prompt   []int  `json:"prompt"` // ppN sizes
	Gen      []int  `json:"gen"`    // tgN lengths
	Threads  int    `json:"threads"`
	NBatch   int    `json:"n_batch"` // default 512 (llama-bench's n_ubatch)
	Reps     int    `json:"reps"`    // default 5
	NoWarmup bool   `json:"no_warmup"`
	// WarmupPrompt, when > 0, is the tokens of a prefill test's untimed
	// warmup instead of the whole prompt.
	WarmupPrompt int    `json:"warmup_prompt,omitempty"`
	Seed         uint64 `json:"seed"` // default 1
	// Weights is the placement asked for: llama.PlaceHuge (the default,
	// "" included) or llama.PlaceMmap. Result.Placement says what was used.
	Weights string `json:"weights,omitempty"`
	// KVType is the KV cache type, "f32" (the default, "" included), "f16"
	// or "bf16".
	KVType string `json:"kv_type,omitempty"`
	// StaticSplit runs prefill matmuls with the static split of rows
	// (llama.Options.StaticSplit), to compare with the prepared batches.
	StaticSplit bool `json:"static_split,omitempty"`
	// Depth, when > 0, is the tokens of a random prompt in the KV cache
	// before each test (llama-bench's -d): made once per test, untimed, and
	// each repetition starts from it again.
	Depth int `json:"depth,omitempty"`
}

// Test is one ppN or tgN test, in the fields of llamacpp.BenchTest.
type Test struct {
	Name         string    `json:"name"`
	NPrompt      int       `json:"n_prompt"`
	NGen         int       `json:"n_gen"`
	SamplesNs    []int64   `json:"samples_ns"`
	TokensPerSec []float64 `json:"tokens_per_sec"`
}

// Result is one bench run.
type Result struct {
	Config  Config    `json:"config"`
	Started time.Time `json:"started"`
	LoadNs  int64     `json:"load_ns"`
	Tests   []Test    `json:"tests"`
	// Kernels lists the op:variant each op resolved to.
	Kernels []string `json:"kernels"`
	// AnonHugePagesKB and FileHugePagesKB: memory on huge pages after the
	// last test (smaps_rollup; -1 when unreadable).
	AnonHugePagesKB int64 `json:"anon_huge_pages_kb"`
	FileHugePagesKB int64 `json:"file_huge_pages_kb"`
	// Placement is where the weights were: "huge" or "mmap" (asked, or a
	// fallback from huge that PlacementNotice explains).
	Placement       string `json:"placement"`
	PlacementNotice string `json:"placement_notice,omitempty"`
	// FileReleased: after the copy to huge pages the file map was released
	// page by page and unmapped, so the peak RSS holds one copy of the weights.
	FileReleased bool `json:"file_released,omitempty"`
}

// Run measures cfg in this process.
func Run(cfg Config) (*Result, error) {
	if cfg.NBatch <= 0 {
		cfg.NBatch = 512
	}
	if cfg.Reps <= 0 {
		cfg.Reps = 5
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if len(cfg.Prompt)+len(cfg.Gen) == 0 {
		return nil, fmt.Errorf("damascus bench: no tests (give prompt sizes or generation lengths)")
	}
	if _, err := ParseKVType(cfg.KVType); err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	for _, n := range append(append([]int(nil), cfg.Prompt...), cfg.Gen...) {
		if n <= 0 {
			return nil, fmt.Errorf("damascus bench: test size %d must be positive", n)
		}
	}
	if cfg.Depth < 0 {
		return nil, fmt.Errorf("damascus bench: depth %d must not be negative", cfg.Depth)
	}
	place, err := llama.ParsePlacement(cfg.Weights)
	if err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	cfg.Weights = string(place)
	if err := promoted.Validate(); err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	res := &Result{Config: cfg, Started: time.Now().UTC()}
	start := time.Now()
	// The copy (and the release of the file map) is part of loading.
	ld, err := llama.Load(cfg.Model, llama.LoadOptions{Placement: place, NoTokenizer: true})
	if err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	defer ld.Close()
	m, f, placed := ld.Model, ld.File, ld.Placed
	res.LoadNs = time.Since(start).Nanoseconds()
	res.Placement, res.PlacementNotice, res.FileReleased = string(placed.Placement), placed.Notice, placed.FileReleased
	bos := int32(-1) // metadata stay readable after the release
	if v, err := f.Uint32("tokenizer.ggml.bos_token_id"); err == nil {
		bos = int32(v)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x64616d61))
	for _, n := range cfg.Prompt {
		t, err := benchOne(m, cfg, n, 0, bos, rng)
		if err != nil {
			return nil, err
		}
		res.Tests = append(res.Tests, t)
	}
	for _, n := range cfg.Gen {
		t, err := benchOne(m, cfg, 0, n, bos, rng)
		if err != nil {
			return nil, err
		}
		res.Tests = append(res.Tests, t)
	}
	res.Kernels = promoted.Chosen()
	res.AnonHugePagesKB, res.FileHugePagesKB = hugePagesKB()
	return res, nil
}

func benchOne(m *llama.Model, cfg Config, nPrompt, nGen int, bos int32, rng *rand.Rand) (Test, error) {
	t := Test{NPrompt: nPrompt, NGen: nGen, Name: protocol.TestName(nPrompt, nGen, cfg.Depth)}
	depth := cfg.Depth
	kv, _ := ParseKVType(cfg.KVType) // checked by Run
	c, err := m.NewContext(llama.Options{NCtx: depth + nPrompt + nGen, NBatch: cfg.NBatch, Threads: cfg.Threads, KVType: kv, StaticSplit: cfg.StaticSplit})
	if err != nil {
		return t, fmt.Errorf("%s: %w", t.Name, err)
	}
	defer c.Close()
	vocab := int32(m.Config.Vocab)
	first := func() int32 {
		if bos >= 0 && bos < vocab {
			return bos
		}
		return rng.Int32N(vocab)
	}
	// prompt evaluates n random tokens after the cached ones (a BOS first
	// in an empty cache).
	prompt := func(n int) error {
		toks := make([]int32, n)
		for i := range toks {
			toks[i] = rng.Int32N(vocab)
		}
		if c.Pos() == 0 {
			toks[0] = first()
		}
		_, err := c.Eval(toks, false)
		return err
	}
	gen := func(n int) error {
		tok := []int32{first()}
		for range n {
			if _, err := c.Eval(tok, false); err != nil {
				return err
			}
			tok[0] = rng.Int32N(vocab)
		}
		return nil
	}
	if depth > 0 {
		if err := prompt(depth); err != nil {
			return t, fmt.Errorf("%s: depth prompt: %w", t.Name, err)
		}
	}
	run := func(warm bool) error {
		if err := c.Truncate(depth); err != nil {
			return err
		}
		switch {
		case nPrompt > 0 && warm && cfg.WarmupPrompt > 0:
			return prompt(min(cfg.WarmupPrompt, nPrompt))
		case nPrompt > 0:
			return prompt(nPrompt)
		case warm:
			return gen(1)
		}
		return gen(nGen)
	}
	if !cfg.NoWarmup {
		if err := run(true); err != nil {
			return t, fmt.Errorf("%s warmup: %w", t.Name, err)
		}
	}
	for range cfg.Reps {
		start := time.Now()
		err := run(false)
		ns := time.Since(start).Nanoseconds()
		if err != nil {
			return t, fmt.Errorf("%s: %w", t.Name, err)
		}
		t.SamplesNs = append(t.SamplesNs, ns)
		t.TokensPerSec = append(t.TokensPerSec, float64(nPrompt+nGen)*1e9/float64(ns))
	}
	return t, nil
}

// hugePagesKB reads AnonHugePages and FilePmdMapped from smaps_rollup.
func hugePagesKB() (anon, file int64) {
	anon, file = -1, -1
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "AnonHugePages:":
			anon = v
		case "FilePmdMapped:":
			file = v
		}
	}
	return
}

// Command is the ledger subcommand that runs Main; the e2e harness spawns
// `<ledger> damascus-bench ...` so each measurement gets a fresh process.
const Command = "damascus-bench"

// Args renders cfg as the flags Main reads.
func (cfg Config) Args() []string {
	join := func(v []int) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.Itoa(n)
		}
		return strings.Join(s, ",")
	}
	a := []string{"-m=" + cfg.Model, "-t=" + strconv.Itoa(cfg.Threads), "-b=" + strconv.Itoa(cfg.NBatch),
		"-r=" + strconv.Itoa(cfg.Reps), "-no-warmup=" + strconv.FormatBool(cfg.NoWarmup), "-seed=" + strconv.FormatUint(cfg.Seed, 10)}
	if cfg.Weights != "" {
		a = append(a, "-weights="+cfg.Weights)
	}
	if cfg.KVType != "" {
		a = append(a, "-kv="+cfg.KVType)
	}
	if cfg.StaticSplit {
		a = append(a, "-static-split")
	}
	if cfg.Depth > 0 {
		a = append(a, "-d="+strconv.Itoa(cfg.Depth))
	}
	if cfg.WarmupPrompt > 0 {
		a = append(a, "-warmup-prompt="+strconv.Itoa(cfg.WarmupPrompt))
	}
	if len(cfg.Prompt) > 0 {
		a = append(a, "-p="+join(cfg.Prompt))
	}
	if len(cfg.Gen) > 0 {
		a = append(a, "-n="+join(cfg.Gen))
	}
	return a
}

// Main is `ledger damascus-bench`: flags as llama-bench's, JSON on stdout.
func Main(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	fs.StringVar(&cfg.Model, "m", "", "GGUF model file")
	ints := func(dst *[]int) func(string) error {
		return func(s string) error {
			*dst = (*dst)[:0]
			for _, f := range strings.Split(s, ",") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				n, err := strconv.Atoi(f)
				if err != nil {
					return fmt.Errorf("not a number: %q", f)
				}
				*dst = append(*dst, n)
			}
			return nil
		}
	}
	fs.Func("p", "prompt sizes, comma-separated (ppN tests)", ints(&cfg.Prompt))
	fs.Func("n", "generation lengths, comma-separated (tgN tests)", ints(&cfg.Gen))
	fs.IntVar(&cfg.Threads, "t", 0, "threads (0: all CPUs)")
	fs.IntVar(&cfg.NBatch, "b", 0, "tokens per prefill step (0: 512)")
	fs.IntVar(&cfg.Reps, "r", 0, "timed repetitions per test (0: 5)")
	fs.BoolVar(&cfg.NoWarmup, "no-warmup", false, "skip the untimed warmup run")
	fs.IntVar(&cfg.WarmupPrompt, "warmup-prompt", 0, "tokens of a prefill test's warmup (0: the whole prompt)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the random prompt tokens (0: 1)")
	fs.StringVar(&cfg.Weights, "weights", string(llama.DefaultPlacement), "where the weights live: huge (copied to anonymous huge pages, the file map released; mmap, with a notice, where huge pages are unavailable) or mmap (in place in the file map)")
	fs.StringVar(&cfg.KVType, "kv", "", "KV cache type: f32 (default), f16 or bf16")
	fs.IntVar(&cfg.Depth, "d", 0, "tokens in the KV cache before each test (llama-bench's -d; 0: none)")
	fs.BoolVar(&cfg.StaticSplit, "static-split", false, "prefill matmuls split rows statically, one call per worker (the schedule before prepared batches)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.Model == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: ledger damascus-bench -m MODEL.gguf [-p 512] [-n 128] [-t N] [-r N] [-weights huge|mmap]")
		return flag.ErrHelp
	}
	res, err := Run(cfg)
	if err != nil {
		return err
	}
	if res.PlacementNotice != "" {
		fmt.Fprintln(stderr, res.PlacementNotice)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// ParseKVType reads a KV cache type name: f32 ("" too), f16 or bf16.
func ParseKVType(s string) (quant.Type, error) {
	switch strings.ToLower(s) {
	case "", "f32":
		return quant.F32, nil
	case "f16":
		return quant.F16, nil
	case "bf16":
		return quant.BF16, nil
	}
	return 0, fmt.Errorf("KV cache type %q: want f32, f16 or bf16", s)
}
