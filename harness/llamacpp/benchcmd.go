package llamacpp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/damascus-llm/damascus/internal/cli"
)

// BenchCommand is the subcommand name under which the ledger binary runs
// BenchMain; RunBench spawns `<ledger> llama-bench ...`.
const BenchCommand = "llama-bench"

// HugePagesTunable makes glibc's malloc back large allocations with
// transparent huge pages; it must be in the environment at process start.
const HugePagesTunable = "glibc.malloc.hugetlb=1"

// PollOff in BenchConfig.Poll turns threadpool polling off (level 0).
const PollOff = -1

// RegisterFlags defines cfg's flags on fs, with llama-bench's names where it has them.
func (cfg *BenchConfig) RegisterFlags(fs *flag.FlagSet) {
	cfg.Spec.RegisterFlags(fs)
	cli.IntVar(fs, &cfg.NBatch, "b", cfg.NBatch, 0, cli.Unbounded, "n_batch (0: 2048)")
	cli.IntVar(fs, &cfg.NUbatch, "ub", cfg.NUbatch, 0, cli.Unbounded, "n_ubatch (0: 512)")
	fs.BoolVar(&cfg.NoMmap, "no-mmap", cfg.NoMmap, "read weights into anonymous memory instead of mapping the file")
	fs.BoolVar(&cfg.NoRepack, "no-repack", cfg.NoRepack, "disable llama.cpp's load-time weight repacking")
	fs.Func("fa", "flash attention: on, off or auto (default auto)", func(s string) error {
		v, err := ParseFlashAttn(s)
		cfg.FlashAttn = v
		return err
	})
	cli.IntVar(fs, &cfg.Poll, "poll", cfg.Poll, -1, 100, "threadpool polling level 1..100 (0: 50; -1: off)")
	fs.StringVar(&cfg.Variant, "cpu-variant", cfg.Variant, "ggml CPU variant library, e.g. sapphirerapids or icelake (default: ggml's choice)")
	fs.Func("kv", "KV cache type: f16 (default), f32 or bf16", func(s string) error {
		switch strings.ToLower(s) {
		case "", "f16", "f32", "bf16":
			cfg.KVType = strings.ToLower(s)
			return nil
		}
		return fmt.Errorf("KV cache type %q: want f16, f32 or bf16", s)
	})
}

// Args renders cfg as the flags RegisterFlags reads.
func (cfg BenchConfig) Args() []string {
	a := cfg.Spec.Args()
	add := func(name, v string) { a = append(a, "-"+name+"="+v) }
	add("b", strconv.Itoa(cfg.NBatch))
	add("ub", strconv.Itoa(cfg.NUbatch))
	add("no-mmap", strconv.FormatBool(cfg.NoMmap))
	add("no-repack", strconv.FormatBool(cfg.NoRepack))
	add("fa", cfg.FlashAttn.String())
	add("poll", strconv.Itoa(cfg.Poll))
	if cfg.Variant != "" {
		add("cpu-variant", cfg.Variant)
	}
	if cfg.KVType != "" {
		add("kv", cfg.KVType)
	}
	return a
}

// BenchMain is the body of `ledger llama-bench`: it parses the flags, runs
// the bench in this process and writes the BenchResult as JSON on stdout.
func BenchMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(BenchCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg BenchConfig
	cfg.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ledger llama-bench -m MODEL.gguf [-p 512] [-n 128] [flags]")
		fmt.Fprintln(stderr, "Runs the pinned llama.cpp like llama-bench, in this process, and prints JSON.")
		fmt.Fprintf(stderr, "Start it with GLIBC_TUNABLES=%s for huge-page weight buffers.\n", HugePagesTunable)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Model == "" || fs.NArg() > 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	res, err := Bench(cfg)
	if err != nil {
		return err
	}
	return cli.WriteJSON(stdout, res)
}

// SpawnOptions say how RunBench starts the measuring process.
type SpawnOptions struct {
	// Ledger is the path of the ledger binary (or any binary whose first
	// argument "llama-bench" runs BenchMain).
	Ledger string
	// HugePages sets GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for the process.
	HugePages bool
	// Env holds extra KEY=VALUE entries added to this process's environment.
	Env []string
	// Stderr receives the child's stderr (llama.cpp's log when
	// DAMASCUS_LLAMACPP_LOG is set); nil keeps it for error messages only.
	Stderr io.Writer
}

// RunBench measures cfg in a fresh process (`<ledger> llama-bench ...`), so
// that the environment (huge pages) and the CPU variant apply from the
// start and nothing else in this process disturbs the timing.
func RunBench(ctx context.Context, cfg BenchConfig, sp SpawnOptions) (*BenchResult, error) {
	if sp.Ledger == "" {
		return nil, errors.New("llama.cpp bench: no ledger binary given")
	}
	if _, err := LibDir(); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, sp.Ledger, append([]string{BenchCommand}, cfg.Args()...)...)
	env := os.Environ()
	if sp.HugePages {
		env = append(env, "GLIBC_TUNABLES="+HugePagesTunable)
	}
	cmd.Env = append(env, sp.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if sp.Stderr != nil {
		cmd.Stderr = io.MultiWriter(&stderr, sp.Stderr)
	}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("llama.cpp bench (%s): %w: %s", sp.Ledger, err, tail(stderr.String(), 2000))
	}
	var res BenchResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("llama.cpp bench: reading its JSON: %w (stdout %q)", err, tail(stdout.String(), 500))
	}
	return &res, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
