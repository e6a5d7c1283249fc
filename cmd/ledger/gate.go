package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
)

func init() {
	commands.Define("gate", "check variants against the float64 reference; exits non-zero on any failure", "usage: ledger gate [--op OPS] [--variant NAMES] [--family NAMES] [--shapes all|tails|real|1B|3B] [--seed N] [-v] [--store FILE]", runGate)
}

func runGate(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var sel selection
	sel.register(fs, "", "all")
	families := fs.String("family", "", "comma-separated variant families (e.g. cuda); empty: all")
	verbose := fs.Bool("v", false, "list every result, not only failures")
	store := fs.String("store", "", "also append the verdicts to this results store (e.g. "+record.DefaultStore+")")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	ops, variants, shapes, err := sel.parse()
	if err != nil {
		fmt.Fprintln(stderr, "ledger gate:", err)
		return errUsage
	}
	start := time.Now()
	var pb *bar
	res, err := gate.Run(ledger.Default, gate.Options{Ops: ops, Variants: variants, Families: cli.SplitList(*families), Shapes: shapes, Seed: sel.seed,
		Progress: func(done, total int, r gate.Result) {
			if pb == nil {
				pb = newBar(stderr, total, "gate")
			}
			pb.set(done, fmt.Sprintf("gate %-16s %-14s", r.Op, r.Shape))
		}})
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return fmt.Errorf("no variant selected (ops %q, variants %q, families %q)", sel.ops, sel.variants, *families)
	}
	var pass, skip int
	for _, r := range res {
		switch r.Outcome {
		case gate.Pass:
			pass++
		case gate.Skip:
			skip++
		}
		if *verbose {
			fmt.Fprintf(stdout, "%-4s %-18s %-14s %-16s NMSE %-9.3g max-abs %-9.3g %s\n", r.Outcome, r.Op, r.Variant, r.Shape, r.NMSE, r.MaxAbs, r.Error)
		}
	}
	failed := gate.Failed(res)
	fmt.Fprintf(stdout, "gate: %d checks in %.1fs: %d passed, %d failed, %d skipped (feature absent); ggml cross-check %s\n",
		len(res), time.Since(start).Seconds(), pass, len(failed), skip, gate.GGMLStatus())
	if *store != "" {
		b := record.NewBatch(time.Now())
		b.Add(record.Record{Kind: record.KindRun, Run: runRecord(append([]string{"gate"}, args...), nil)})
		for i := range res {
			b.Add(record.Record{Kind: record.KindGate, Gate: &res[i]})
		}
		if err := record.Append(*store, b.Recs...); err != nil {
			return err
		}
	}
	if len(failed) == 0 {
		return nil
	}
	var msg []string
	for _, f := range failed {
		line := fmt.Sprintf("FAIL op %s variant %s shape %s: %s", f.Op, f.Variant, f.Shape, f.Error)
		fmt.Fprintln(stderr, line)
		msg = append(msg, fmt.Sprintf("%s:%s at %s", f.Op, f.Variant, f.Shape))
	}
	return fmt.Errorf("%d check(s) failed: %s", len(failed), strings.Join(msg, "; "))
}
