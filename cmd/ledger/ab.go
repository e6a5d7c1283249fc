package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/damascus-llm/damascus/harness/e2e"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/promoted/promote"
	"github.com/damascus-llm/damascus/protocol"
)

func init() {
	commands.Define("ab", "engine A/B: Damascus's promoted kernels beside arms that force others (DAMASCUS_KERNELS), gated, then interleaved rounds", "usage: ledger ab --arm NAME=op=variant,... [--arm ...] [-m MODEL] [--pp N,...] [--tg N,...] [--runs R] [--threads T] [flags]", runAB)
}

// armFlag collects --arm NAME=op=variant,op=variant.
type armFlag []e2e.Arm

func (a *armFlag) String() string { return fmt.Sprint(*a) }
func (a *armFlag) Set(s string) error {
	name, kernels, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q is not NAME=op=variant,...", s)
	}
	*a = append(*a, e2e.Arm{Name: name, Kernels: kernels})
	return nil
}

func runAB(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	o := e2e.ABOptions{Protocol: protocol.AB{Runs: 10, Threads: runtime.NumCPU(), Prompts: []int{16, 64, 512}, Gens: []int{64}}}
	var arms armFlag
	var store, shapes string
	fs.Var(&arms, "arm", "an arm: NAME=op=variant,op=variant (DAMASCUS_KERNELS), repeatable; the promoted kernels are always the first arm")
	small, chunk := armKnobFlag(fs, "arm-small-batch", "NAME=N: the arm's DAMASCUS_SMALL_BATCH (prefill steps of at most N rows through the batched decode kernel); NAME may be a new arm, which then changes only that"),
		armKnobFlag(fs, "arm-batch-chunk", "NAME=N: the arm's DAMASCUS_BATCH_CHUNK (weight rows per dealt chunk of a prefill matmul, a multiple of 16); NAME may be a new arm, which then changes only that")
	run := armKnobFlag(fs, "arm-deal-run", "NAME=N: the arm's DAMASCUS_DEAL_RUN (the most 256 KiB chunks of a decode matvec a worker takes at once); NAME may be a new arm, which then changes only that")
	fs.StringVar(&o.Model, "m", "", "GGUF model (default: the synthetic --preset model, made and cached under --cache)")
	fs.StringVar(&o.Preset, "preset", "llama3.2-1b", "synthetic model preset when no -m is given")
	fs.StringVar(&o.FileType, "type", "Q4_K_M", "synthetic model file type")
	fs.StringVar(&o.CacheDir, "cache", "cache", "directory for synthetic models")
	cli.IntListVar(fs, &o.Protocol.Prompts, "pp", 1, cli.Unbounded, "prompt lengths, comma-separated (ppN tests)")
	cli.IntListVar(fs, &o.Protocol.Gens, "tg", 1, cli.Unbounded, "generation lengths, comma-separated (tgN tests)")
	cli.IntVar(fs, &o.Protocol.Runs, "runs", o.Protocol.Runs, 1, cli.Unbounded, "rounds: one fresh process per arm each")
	cli.ThreadsVar(fs, &o.Protocol.Threads, "threads", o.Protocol.Threads, "threads of every arm")
	cli.IntVar(fs, &o.Protocol.WarmupPromptTokens, "warmup-prompt", 64, 0, cli.Unbounded, "tokens of each process's untimed prefill warmup (0: each whole prompt)")
	fs.StringVar(&o.Weights, "weights", string(llama.DefaultPlacement), "where Damascus keeps its weights: huge or mmap")
	fs.StringVar(&shapes, "gate-shapes", "all", "shapes each arm's variants are gated at before anything is timed: all, tails, real, 1B or 3B")
	registerRecording(fs, &store, &o.Note)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	for env, flag := range map[string]string{promoted.SmallBatchEnv: "--arm-small-batch", promoted.BatchChunkEnv: "--arm-batch-chunk", promoted.DealRunEnv: "--arm-deal-run"} {
		if _, ok := os.LookupEnv(env); ok {
			fmt.Fprintf(stderr, "ledger ab: %s is set: it would change the promoted arm too; give an arm %s instead\n", env, flag)
			return errUsage
		}
	}
	o.Arms = withKnobs(arms, small, chunk, run)
	var err error
	if o.GateShapes, err = gate.ParseShapes(shapes); err != nil {
		fmt.Fprintln(stderr, "ledger ab:", err)
		return errUsage
	}
	if err := o.Check(); err != nil {
		fmt.Fprintln(stderr, "ledger ab:", err)
		return errUsage
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the ledger binary to spawn: %w", err)
	}
	o.Command, o.Exe = append([]string{"ab"}, args...), exe
	b, err := e2e.RunAB(context.Background(), o, stderr)
	if err != nil {
		return err
	}
	for _, a := range o.Arms {
		// The verdict the bundle rule would give, printed; `ledger promote
		// --bundle` records it.
		p := promote.CompareArm(b.Recs, a.Name, protocol.DefaultRule(), true) // the run gated every arm's kernels before timing
		what := a.Kernels
		for _, k := range [][2]string{{promoted.SmallBatchEnv, a.SmallBatch}, {promoted.BatchChunkEnv, a.BatchChunk}, {promoted.DealRunEnv, a.DealRun}} {
			if k[1] != "" {
				what = strings.TrimPrefix(what+", ", ", ") + k[0] + "=" + k[1]
			}
		}
		fmt.Fprintf(stdout, "arm %s (%s) against the promoted kernels:\n", a.Name, what)
		for _, l := range promote.BundleSummary(p) {
			fmt.Fprintln(stdout, "  "+l)
		}
		for _, l := range promote.PairedSummary(b.Recs, a.Name) {
			fmt.Fprintln(stdout, "  "+l)
		}
		rule := "bundle rule"
		if a.SmallBatch != "" || a.BatchChunk != "" || a.DealRun != "" {
			rule = "the same rule (a crossover, chunk or deal run is set by hand in promoted/smallbatch.go, citing the run)"
		}
		fmt.Fprintf(stdout, "  %s\n  %s: %s\n", rssLine(b.Recs, a.Name), rule, verdict(p))
	}
	if store != "" {
		bench, err := recordRun(store, b)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "recorded run %s in %s; benchstat file %s\n", b.RunID, store, bench)
	}
	return nil
}

// armKnobFlag defines a repeatable flag NAME=N that sets one engine knob of
// arm NAME, and returns the map it fills.
func armKnobFlag(fs *flag.FlagSet, name, usage string) map[string]string {
	m := map[string]string{}
	fs.Func(name, usage, func(v string) error {
		arm, n, ok := strings.Cut(v, "=")
		if !ok || arm == "" {
			return fmt.Errorf("%q is not NAME=N", v)
		}
		m[arm] = n
		return nil
	})
	return m
}

// withKnobs gives the --arm arms their knobs and appends, in name order,
// the arms that only set knobs.
func withKnobs(arms []e2e.Arm, small, chunk, run map[string]string) []e2e.Arm {
	known := map[string]bool{}
	for i := range arms {
		arms[i].SmallBatch, arms[i].BatchChunk, arms[i].DealRun = small[arms[i].Name], chunk[arms[i].Name], run[arms[i].Name]
		known[arms[i].Name] = true
	}
	names := append(slices.Collect(maps.Keys(small)), slices.Collect(maps.Keys(chunk))...)
	names = append(names, slices.Collect(maps.Keys(run))...)
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		if !known[name] {
			arms = append(arms, e2e.Arm{Name: name, SmallBatch: small[name], BatchChunk: chunk[name], DealRun: run[name]})
		}
	}
	return arms
}

func verdict(p record.Promotion) string {
	if p.Promote {
		return "would promote: " + p.Reason
	}
	return "would refuse: " + p.Reason
}

// rssLine compares the arm's median peak RSS with the promoted kernels'.
func rssLine(recs []record.Record, arm string) string {
	var inc, ch float64
	for _, r := range recs {
		if r.E2E == nil || r.E2E.Test != "peak-rss" {
			continue
		}
		switch r.E2E.Engine {
		case "damascus":
			inc = r.E2E.Summary.Median
		case e2e.ArmEngine(arm):
			ch = r.E2E.Summary.Median
		}
	}
	return fmt.Sprintf("peak RSS %.0f → %.0f MiB", inc/(1<<20), ch/(1<<20))
}
