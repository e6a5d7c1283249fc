package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/damascus-llm/damascus/harness/e2e"
	"github.com/damascus-llm/damascus/harness/enginebench"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/protocol"
)

func init() {
	commands.Define("e2e", "end to end: Damascus beside llama.cpp (ppN, tgN, cold start, peak RSS, sustained)", "usage: ledger e2e [-m MODEL] [--pp N] [--tg N] [--runs R] [--reps N] [--threads T] [--json FILE] [flags]", runE2E)
	commands.Add(enginebench.Command, "benchmark the Damascus engine like llama-bench (JSON on stdout)", enginebench.Main)
	commands.Add(e2e.MeasuredCommand, "run a ledger command, then print its JSON output with this process's peak RSS (used by e2e)", runMeasured)
}

// runMeasured is e2e.MeasuredCommand: the bench runs in this process, so
// the peak RSS it prints is the bench's own.
func runMeasured(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: ledger measured COMMAND [ARGS]")
		return errUsage
	}
	c, ok := commands.Lookup(args[0])
	if !ok || args[0] == e2e.MeasuredCommand {
		return fmt.Errorf("unknown command %q", args[0])
	}
	var out bytes.Buffer
	if err := c.Run(args[1:], &out, stderr); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	if !json.Valid(out.Bytes()) {
		return fmt.Errorf("%s did not print JSON", args[0])
	}
	return json.NewEncoder(stdout).Encode(e2e.MeasuredOutput{PeakRSSBytes: e2e.PeakRSS(), Output: out.Bytes()})
}

// e2eFlags configure an end-to-end comparison.
type e2eFlags struct {
	opts           e2e.Options
	jsonOut, store string
}

func (f *e2eFlags) register(fs *flag.FlagSet, quick bool) {
	f.opts.Protocol = protocol.DefaultE2E()
	p := &f.opts.Protocol
	f.opts.ColdRuns = 3
	f.opts.LlamaNGL = -1 // unset: see --llama-ngl
	llamaConfigs := ""
	if quick {
		// The main job's quick default: the same protocol, scaled to minutes.
		// 128 generated tokens and 5 rounds: with 32 tokens and 3 rounds the
		// per-round decode ratio spread 0.55-2.16x on a fresh machine.
		// llama.cpp is measured as ggml picks its CPU variant, with and
		// without its weights on huge pages, and its row is the better of
		// the two per test: its best configuration here, not its default.
		p.PromptTokens, p.GenTokens, p.Runs, p.SustainedSeconds = 128, 128, 5, 0
		f.opts.ColdRuns = 1
		llamaConfigs = "default,default+huge"
	}
	p.Threads = runtime.NumCPU()
	if !quick {
		fs.StringVar(&f.opts.Model, "m", "", "GGUF model (default: the synthetic --preset model, made and cached under --cache)")
		u := cli.Unbounded
		cli.IntVar(fs, &p.PromptTokens, "pp", p.PromptTokens, 0, u, "prompt tokens of the prefill test (0: none)")
		cli.IntVar(fs, &p.GenTokens, "tg", p.GenTokens, 0, u, "generated tokens of the decode test (0: none)")
		cli.IntVar(fs, &p.Runs, "runs", p.Runs, 1, u, "timed runs per engine and test")
		cli.IntVar(fs, &p.Depth, "depth", 0, 0, u, "tokens in the KV cache before each prefill and decode test, both engines (llama-bench's -d; 0: none); cold starts and sustained decode start empty")
		cli.ThreadsVar(fs, &p.DepthThreads, "depth-threads", 0, "threads both engines fill the --depth prompt on, untimed (0: --threads); the timed tests keep --threads: lets a many-core host take a long depth leg's rounds in its time; peak RSS then includes the fill's per-worker buffers")
		fs.BoolVar(&p.DepthSnapshot, "depth-snapshot", false, "each engine fills the --depth prompt once, in its first round, and its later rounds read that cache from a snapshot file in a temporary directory ($TMPDIR; removed after) instead of filling it again: the same tokens and cache, untimed either way; a depth leg's round is then its decode, not minutes of fill")
		cli.IntVar(fs, &p.RepsPerRound, "reps", 1, 1, u, "timed samples of the prefill and decode tests per engine process, i.e. per round (llama-bench's -r): for depth legs, where each process first fills the --depth cache (minutes on a CPU), N samples share that one fill; records --runs × N samples, paired by round and repetition; cold starts, peak RSS and sustained decode are unaffected")
		cli.IntVar(fs, &p.Batch, "batch", 0, 0, u, "tokens one prefill step takes, both engines (Damascus's batch, llama.cpp's n_ubatch; 0: each engine's default: llama.cpp 512, Damascus 512 on the CPU and 1024 on the GPU)")
		cli.IntVar(fs, &p.WarmupPromptTokens, "warmup-prompt", 0, 0, u, "tokens of the prefill test's untimed warmup in each process, both engines (0: the whole prompt, as llama-bench)")
		cli.ThreadsVar(fs, &p.Threads, "threads", p.Threads, "threads, the same for both engines")
		fs.StringVar(&f.jsonOut, "json", "", "also write the comparison as JSON to this file")
		registerRecording(fs, &f.store, &f.opts.Note)
		fs.StringVar(&f.opts.Device, "device", "cpu", "where Damascus's graph runs: cpu or cuda (the GPU; needs --llama-bench, a CUDA build of llama-bench)")
		fs.StringVar(&f.opts.LlamaBench, "llama-bench", "", "an external llama-bench binary to stand for llama.cpp instead of the pinned package (spawned each round with -o jsonl)")
		cli.IntVar(fs, &f.opts.LlamaNGL, "llama-ngl", -1, -1, u, "llama-bench's -ngl, layers on the GPU (-1: 99 with --device cuda, else llama-bench's default)")
		fs.StringVar(&f.opts.LlamaSource, "llama-source", "", "where the --llama-bench binary came from (recorded as stated, e.g. the pinned source and its cmake flags)")
		fs.Float64Var(&p.NominalGBps, "nominal-gbps", 0, "the device's stated memory bandwidth, GB/s: decode notes give the weight stream as a fraction of it (0: none; the CPU probe is not run with --device cuda)")
	}
	fs.StringVar(&f.opts.Preset, "preset", "llama3.2-1b", "synthetic model preset when no -m is given")
	fs.StringVar(&f.opts.FileType, "type", "Q4_K_M", "synthetic model file type")
	fs.StringVar(&f.opts.CacheDir, "cache", "cache", "directory for synthetic models")
	cli.IntVar(fs, &p.SustainedSeconds, "sustained", p.SustainedSeconds, 0, cli.Unbounded, "seconds of sustained decode per engine (0: skip)")
	cli.IntVar(fs, &f.opts.ColdRuns, "cold-runs", f.opts.ColdRuns, 0, cli.Unbounded, "cold starts per engine (model evicted from the page cache first; 0: skip)")
	fs.StringVar(&f.opts.CPUVariant, "cpu-variant", "", "ggml CPU variant for llama.cpp, e.g. sapphirerapids (default: ggml's choice)")
	fs.BoolVar(&f.opts.HugePages, "huge-pages", false, "run llama.cpp with GLIBC_TUNABLES="+llamacpp.HugePagesTunable)
	fs.StringVar(&f.opts.Weights, "weights", string(llama.DefaultPlacement), "where Damascus keeps its weights: huge (copied to anonymous huge pages, the file map released; mmap, with a notice, where huge pages are unavailable) or mmap (in place in the file map)")
	if !quick { // quick shares the kernel ledger's --no-roofline
		fs.BoolVar(&f.opts.NoRoofline, "no-roofline", false, "skip the memory-bandwidth probe (no fraction of bandwidth)")
	}
	fs.StringVar(&f.opts.KVType, "kv-type", "", "KV cache type of both engines: f32, f16 or bf16 (default: each engine's own, f32 for Damascus and f16 for llama.cpp)")
	fs.StringVar(&f.opts.LlamaKVType, "llama-kv-type", "", "llama.cpp's KV cache type when it should differ from --kv-type (f32, f16 or bf16)")
	fs.StringVar(&f.opts.LlamaConfigs, "llama-configs", llamaConfigs, "several llama.cpp configurations, e.g. default,sapphirerapids+huge,icelake: each is measured, and llama.cpp's row takes the best per test")
}

func runE2E(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var ef e2eFlags
	ef.register(fs, false)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	ef.opts.Device = strings.ToLower(ef.opts.Device)
	if err := ef.opts.Check(); err != nil {
		fmt.Fprintln(stderr, "ledger e2e:", err)
		return errUsage
	}
	for _, kv := range []string{ef.opts.KVType, ef.opts.LlamaKVType} {
		if _, err := enginebench.ParseKVType(kv); err != nil {
			fmt.Fprintln(stderr, "ledger e2e: KV cache type:", err)
			return errUsage
		}
	}
	if ef.jsonOut != "" {
		// Before minutes of measuring: a device, FIFO or the model is refused.
		if _, err := outfile.Check(ef.jsonOut, ef.opts.Model, ef.store); err != nil {
			return err
		}
	}
	return endToEnd(append([]string{"e2e"}, args...), ef, stdout, stderr)
}

// endToEnd runs the comparison, prints its table and writes its JSON and
// records where the flags ask.
func endToEnd(cmdline []string, ef e2eFlags, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the ledger binary to spawn: %w", err)
	}
	o := ef.opts
	o.Command, o.Exe = cmdline, exe
	b, err := e2e.Run(context.Background(), o, stderr)
	if err != nil {
		return err
	}
	if o.Protocol.SustainedSeconds == 0 {
		fmt.Fprintln(stdout, "(sustained decode skipped: --sustained 0)")
	}
	fmt.Fprintln(stdout, record.BaselineTable(b.Recs).Render())
	if ef.jsonOut != "" {
		data, err := e2e.JSON(b)
		if err != nil {
			return fmt.Errorf("e2e JSON: %w", err)
		}
		if err := outfile.WriteFile(ef.jsonOut, data); err != nil {
			return err
		}
	}
	if ef.store != "" {
		bench, err := recordRun(ef.store, b)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "recorded run %s in %s; benchstat file %s\n", b.RunID, ef.store, bench)
	}
	return nil
}
