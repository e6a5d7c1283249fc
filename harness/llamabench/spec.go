package llamabench

import (
	"flag"
	"strconv"

	"github.com/damascus-llm/damascus/internal/cli"
)

// Spec is what every engine's bench takes, with llama-bench's flags: the
// model, the tests and their pacing. Each adapter's config embeds it and adds
// its engine's own knobs. Zero values take llama-bench's defaults.
type Spec struct {
	Model   string `json:"model"`
	Prompt  []int  `json:"prompt"`  // ppN sizes
	Gen     []int  `json:"gen"`     // tgN lengths
	Threads int    `json:"threads"` // 0: the engine's default (all CPUs)
	Reps    int    `json:"reps"`    // default 5
	// NoWarmup skips the untimed warmup; WarmupPrompt, when > 0, is the
	// tokens of a prefill test's warmup instead of the whole prompt.
	NoWarmup     bool   `json:"no_warmup"`
	WarmupPrompt int    `json:"warmup_prompt,omitempty"`
	Seed         uint64 `json:"seed"` // seed of the random tokens; default 1
	// Depth, when > 0, is the tokens of a random prompt in the KV cache
	// before each test (llama-bench's -d): made once per test, untimed, and
	// each repetition starts from it again.
	Depth int `json:"depth,omitempty"`
	// DepthThreads, when > 0, is the threads the untimed depth prompt runs
	// on; the timed tests keep Threads. 0: Threads.
	DepthThreads int `json:"depth_threads,omitempty"`
	// DepthSnapshot, when set, is a directory where the depth prompt's
	// cache is kept: a test whose snapshot is there reads it instead of
	// filling the depth again; one that is not fills and writes it. The
	// engine must be a Snapshotter.
	DepthSnapshot string `json:"depth_snapshot,omitempty"`
}

// Plan is s as the driver runs it, the random tokens from stream.
func (s Spec) Plan(stream uint64) Plan {
	return Plan{Prompt: s.Prompt, Gen: s.Gen, Reps: s.Reps, NoWarmup: s.NoWarmup,
		WarmupPrompt: s.WarmupPrompt, Depth: s.Depth, DepthThreads: s.DepthThreads, DepthSnapshot: s.DepthSnapshot,
		Seed: s.Seed, Stream: stream}
}

// RegisterFlags defines s's flags on fs, with llama-bench's names.
func (s *Spec) RegisterFlags(fs *flag.FlagSet) {
	u := cli.Unbounded
	fs.StringVar(&s.Model, "m", s.Model, "GGUF model file")
	cli.IntListVar(fs, &s.Prompt, "p", 1, u, "prompt sizes, comma-separated (ppN tests)")
	cli.IntListVar(fs, &s.Gen, "n", 1, u, "generation lengths, comma-separated (tgN tests)")
	cli.ThreadsVar(fs, &s.Threads, "t", s.Threads, "threads (0: all CPUs)")
	cli.IntVar(fs, &s.Reps, "r", s.Reps, 0, u, "timed repetitions per test (0: 5)")
	fs.BoolVar(&s.NoWarmup, "no-warmup", s.NoWarmup, "skip the untimed warmup run")
	cli.IntVar(fs, &s.WarmupPrompt, "warmup-prompt", s.WarmupPrompt, 0, u, "tokens of a prefill test's warmup (0: the whole prompt)")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "seed of the random prompt tokens (0: 1)")
	cli.IntVar(fs, &s.Depth, "d", s.Depth, 0, u, "tokens in the KV cache before each test (llama-bench's -d; 0: none)")
	cli.ThreadsVar(fs, &s.DepthThreads, "depth-threads", s.DepthThreads, "threads of the untimed depth prompt; the timed tests keep -t (0: -t's)")
	fs.StringVar(&s.DepthSnapshot, "depth-snapshot", s.DepthSnapshot, "directory keeping the depth prompt's KV cache: read it when there, else fill the depth and write it (\"\": fill every test)")
}

// Args renders s as the flags RegisterFlags reads.
func (s Spec) Args() []string {
	a := []string{"-m=" + s.Model}
	if len(s.Prompt) > 0 {
		a = append(a, "-p="+JoinInts(s.Prompt))
	}
	if len(s.Gen) > 0 {
		a = append(a, "-n="+JoinInts(s.Gen))
	}
	a = append(a, "-t="+strconv.Itoa(s.Threads), "-r="+strconv.Itoa(s.Reps), "-no-warmup="+strconv.FormatBool(s.NoWarmup),
		"-seed="+strconv.FormatUint(s.Seed, 10))
	if s.WarmupPrompt > 0 {
		a = append(a, "-warmup-prompt="+strconv.Itoa(s.WarmupPrompt))
	}
	if s.Depth > 0 {
		a = append(a, "-d="+strconv.Itoa(s.Depth))
	}
	if s.DepthThreads > 0 {
		a = append(a, "-depth-threads="+strconv.Itoa(s.DepthThreads))
	}
	if s.DepthSnapshot != "" {
		a = append(a, "-depth-snapshot="+s.DepthSnapshot)
	}
	return a
}
