package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/e2e"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/model/llama"
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
	o.Arms = arms
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
		p, _, err := promote.DecideBundle(promote.BundleRequest{Recs: b.Recs, Reg: ledger.Default, Rule: protocol.DefaultRule(), Arm: a.Name}, record.NewBatch(time.Now()))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "arm %s (%s) against the promoted kernels:\n", a.Name, a.Kernels)
		for _, l := range promote.BundleSummary(p) {
			fmt.Fprintln(stdout, "  "+l)
		}
		fmt.Fprintf(stdout, "  %s\n  bundle rule: %s\n", rssLine(b.Recs, a.Name), verdict(p))
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
