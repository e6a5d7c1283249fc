package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/promoted/promote"
	"github.com/damascus-llm/damascus/protocol"
)

func init() {
	commands.Define("promote", "apply the promotion rule to a kernel run and rewrite promoted/preferences.json", "usage: ledger promote [--run ID] [--op OPS] [--variant NAME] [--bundle ARM [--absent FEATURES]] [--prefs FILE] [--store FILE] [-n]", runPromote)
}

const defaultPrefs = "promoted/preferences.json"

func runPromote(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	store := fs.String("store", record.DefaultStore, "results store (folder of month files or one .jsonl file) to read the evidence from and append decisions to")
	runID := fs.String("run", "", "kernel run to judge (default: the latest)")
	ops := fs.String("op", "", "comma-separated ops to consider (default: every op timed in the run)")
	variant := fs.String("variant", "", "the challenger to judge (default: every variant timed); the command fails if it is refused")
	prefsPath := fs.String("prefs", defaultPrefs, "preference file to rewrite")
	dry := fs.Bool("n", false, "dry run: print decisions, write nothing")
	bundle := fs.String("bundle", "", "judge this arm of an engine A/B run (ledger ab; default: the latest) by the bundle rule: promoted, its kernels go first as one bundle")
	cpuOnly := fs.Bool("cpu-only", false, "limit the promoted entries to processors of the evidence machine's CPU vendor (for wins that do not carry over to other vendors)")
	cpuFamily := fs.Bool("cpu-family", false, "limit the promoted entries to processors of the evidence machine's CPU vendor and family (e.g. AuthenticAMD/26, Zen 5: for wins that do not carry over to other microarchitectures)")
	absent := fs.String("absent", "", "with --bundle: comma-separated CPU features the bundle is limited to processors without (each must have been absent, e.g. hidden by DAMASCUS_CPU_HIDE, on the run's machine)")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	if *absent != "" && *bundle == "" {
		return fmt.Errorf("--absent limits a bundle: give --bundle too")
	}
	all, err := record.LoadSkippingDamaged(*store, stderr) // a missing store is an error here
	if err != nil {
		return err
	}
	var recs []record.Record
	switch {
	case *runID != "":
		recs = record.OfRun(all, *runID)
	case *bundle != "":
		recs = latestAB(all)
	default:
		recs = record.LatestRun(all, record.KindKernel)
	}
	if len(recs) == 0 {
		return fmt.Errorf("no kernel run in %s (run `ledger run` first, or check --run)", *store)
	}
	data, err := os.ReadFile(*prefsPath)
	if err != nil {
		return fmt.Errorf("reading preferences: %w", err)
	}
	prefs, err := promoted.ParsePreferences(data)
	if err != nil {
		return err
	}
	cpu := promote.RunCPU(recs)
	if *cpuOnly && cpu == "" {
		return fmt.Errorf("--cpu-only: run %s does not record its machine's CPU vendor", recs[0].RunID)
	}
	if *cpuFamily && !strings.Contains(cpu, "/") {
		return fmt.Errorf("--cpu-family: run %s does not record its machine's CPU vendor and family", recs[0].RunID)
	}
	b := record.NewBatch(time.Now())
	if *bundle != "" {
		return promoteBundle(promote.BundleRequest{Recs: recs, Prefs: prefs, Reg: ledger.Default, Rule: protocol.DefaultRule(), Arm: *bundle, CPU: cpu, CPUOnly: *cpuOnly, FamilyOnly: *cpuFamily, Absent: cli.SplitList(*absent)},
			b, *store, *prefsPath, *dry, stdout)
	}
	decisions, newPrefs := promote.Decide(promote.Request{Recs: recs, Prefs: prefs, Reg: ledger.Default, Rule: protocol.DefaultRule(),
		Ops: cli.SplitList(*ops), Only: *variant, CPU: cpu, CPUOnly: *cpuOnly, FamilyOnly: *cpuFamily}, b)
	if len(decisions) == 0 {
		return fmt.Errorf("nothing to judge in run %s (ops %q, variant %q): need an incumbent and a challenger timed in the same run", recs[0].RunID, *ops, *variant)
	}
	refusedNamed := false
	for _, d := range decisions {
		verdict := "refused"
		if d.Promote {
			verdict = "PROMOTED"
		} else if d.Challenger == *variant {
			refusedNamed = true
		}
		fmt.Fprintf(stdout, "%-18s %-14s over %-14s %-8s %s\n", d.Op, d.Challenger, d.Incumbent, verdict, d.Reason)
		for _, s := range d.Shapes {
			fmt.Fprintf(stdout, "    %-16s gain %+6.1f%%  p %.3g  %s\n", s.Shape, 100*s.Decision.Gain, s.Decision.P, s.Decision.Reason)
		}
	}
	if !*dry {
		if err := record.Append(*store, b.Recs...); err != nil {
			return err
		}
		out, err := newPrefs.Marshal()
		if err != nil {
			return err
		}
		// Rewritten in place on purpose: the file it read is the one it updates.
		if err := outfile.WriteFile(*prefsPath, out, *store); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "decisions recorded in %s; %s rewritten (rebuild to embed it)\n", *store, *prefsPath)
	}
	if refusedNamed {
		return fmt.Errorf("%s was not promoted: it did not beat the incumbent by the rule", *variant)
	}
	return nil
}

// latestAB returns the records of the latest engine A/B run in all.
func latestAB(all []record.Record) []record.Record {
	id := ""
	for _, r := range all {
		if r.Run != nil && r.Run.Protocol.AB != nil {
			id = r.RunID
		}
	}
	if id == "" {
		return nil
	}
	return record.OfRun(all, id)
}

// promoteBundle judges one arm of an A/B run and, unless dry, records the
// decision and rewrites the preferences; a refusal is an error.
func promoteBundle(req promote.BundleRequest, b *record.Batch, store, prefsPath string, dry bool, stdout io.Writer) error {
	p, newPrefs, err := promote.DecideBundle(req, b)
	if err != nil {
		return fmt.Errorf("run %s: %w", req.Recs[0].RunID, err)
	}
	verdict := "refused"
	if p.Promote {
		verdict = "PROMOTED"
	}
	fmt.Fprintf(stdout, "bundle %-14s over the promoted kernels %s %s\n", p.Challenger, verdict, p.Reason)
	for _, l := range promote.BundleSummary(p) {
		fmt.Fprintln(stdout, "    "+l)
	}
	if !dry {
		if err := record.Append(store, b.Recs...); err != nil {
			return err
		}
		out, err := newPrefs.Marshal()
		if err != nil {
			return err
		}
		if err := outfile.WriteFile(prefsPath, out, store); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "decision recorded in %s; %s rewritten (rebuild to embed it)\n", store, prefsPath)
	}
	if !p.Promote {
		return fmt.Errorf("bundle %s was not promoted: %s", p.Challenger, p.Reason)
	}
	return nil
}
