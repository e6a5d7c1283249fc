package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/gate"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/results"
)

func init() {
	register(command{name: "promote", summary: "apply the promotion rule to a kernel run and rewrite promoted/preferences.json", run: runPromote})
}

const defaultPrefs = "promoted/preferences.json"

func runPromote(args []string, stdout, stderr io.Writer) error {
	fs := cli.Flags("promote", "usage: ledger promote [--run ID] [--op OPS] [--variant NAME] [--prefs FILE] [--store FILE] [-n]", stderr)
	store := fs.String("store", results.DefaultStore, "results file to read the evidence from and append decisions to")
	runID := fs.String("run", "", "kernel run to judge (default: the latest)")
	ops := fs.String("op", "", "comma-separated ops to consider (default: every op timed in the run)")
	variant := fs.String("variant", "", "the challenger to judge (default: every variant timed); the command fails if it is refused")
	prefsPath := fs.String("prefs", defaultPrefs, "preference file to rewrite")
	dry := fs.Bool("n", false, "dry run: print decisions, write nothing")
	cpuOnly := fs.Bool("cpu-only", false, "limit the promoted entries to processors of the evidence machine's CPU vendor (for wins that do not carry over to other vendors)")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	all, err := results.LoadSkippingDamaged(*store, stderr) // a missing store is an error here
	if err != nil {
		return err
	}
	var recs []results.Record
	if *runID == "" {
		recs = results.LatestRun(all, results.KindKernel)
	} else {
		recs = results.OfRun(all, *runID)
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
	vendor := runVendor(recs)
	if *cpuOnly && vendor == "" {
		return fmt.Errorf("--cpu-only: run %s does not record its machine's CPU vendor", recs[0].RunID)
	}
	b := results.NewBatch(time.Now())
	decisions, newPrefs := decidePromotions(recs, prefs, ledger.Default, protocol.DefaultRule(), splitList(*ops), *variant, vendor, *cpuOnly, b)
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
		if err := results.Append(*store, b.Recs...); err != nil {
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

// runVendor returns the CPUID vendor of the machine a run's records were
// measured on, or "" when the run record lacks it.
func runVendor(recs []results.Record) string {
	for _, r := range recs {
		if r.Run != nil {
			return r.Run.Protocol.Machine.CPU.Vendor
		}
	}
	return ""
}

// decidePromotions judges, for every op timed in recs, each challenger
// against the incumbent of its precision class (the first preference of
// that class timed in the run, else naive or naive-<precision>)
// by rule at every real model shape both were timed at (every shape when the
// run timed no real one: the odd tail shapes are there to prove correctness,
// and at a handful of values call overhead decides the race). A challenger
// is promoted only if the rule promotes it at every judged shape and it
// passed the gate everywhere in the run. Promoted challengers go to the
// front of the op's list, fastest first (geometric mean of their median
// times), each citing its promotion record; the batch b receives one
// promotion record per decision. vendor is the CPU vendor of the machine
// the run was measured on: the incumbent is the first preference that
// applies there, and with cpuOnly the promoted entries are limited to it
// (an entry for the same variant on any CPU stays).
func decidePromotions(recs []results.Record, prefs promoted.Preferences, reg *ledger.Registry, rule protocol.Rule,
	ops []string, only, vendor string, cpuOnly bool, b *results.Batch) ([]results.Promotion, promoted.Preferences) {
	type key struct{ op, variant, shape string }
	timed := map[key]results.Record{}
	byOp := map[string][]string{} // op → variants in first-seen order
	shapes := map[string][]string{}
	for _, r := range recs {
		k := r.Kernel
		if k == nil {
			continue
		}
		if len(ops) > 0 && !contains(ops, k.Op) {
			continue
		}
		if _, ok := timed[key{k.Op, k.Variant, ""}]; !ok {
			byOp[k.Op] = append(byOp[k.Op], k.Variant)
			timed[key{k.Op, k.Variant, ""}] = r
		}
		if !contains(shapes[k.Op], k.Shape) {
			shapes[k.Op] = append(shapes[k.Op], k.Shape)
		}
		timed[key{k.Op, k.Variant, k.Shape}] = r
	}
	var gates []gate.Result
	for _, r := range recs {
		if r.Gate != nil {
			gates = append(gates, *r.Gate)
		}
	}
	out := promoted.Preferences{Note: prefs.Note, Ops: map[string][]promoted.Choice{}}
	for op, list := range prefs.Ops {
		out.Ops[op] = append([]promoted.Choice(nil), list...)
	}
	var decisions []results.Promotion
	opNames := make([]string, 0, len(byOp))
	for op := range byOp {
		opNames = append(opNames, op)
	}
	sort.Strings(opNames)
	for _, op := range opNames {
		// The incumbent of a challenger is of its precision class: the first
		// preference of that class timed in the run, else what the engine
		// runs without one.
		precision := func(name string) ledger.Precision {
			v, _ := reg.Lookup(op, name)
			return v.Precision
		}
		incumbentFor := func(prec ledger.Precision) string {
			for _, c := range prefs.Ops[op] {
				if !c.AppliesTo(vendor) || precision(c.Variant) != prec {
					continue
				}
				if _, ok := timed[key{op, c.Variant, ""}]; ok {
					if v, ok := reg.Lookup(op, c.Variant); !ok || v.Status != ledger.Retired {
						return c.Variant
					}
				}
			}
			// What the engine runs without a preference: the matvec loop for
			// matmul, the per-token loop for batched attention, the naive
			// variant (of the class) otherwise.
			incumbent := "naive"
			if prec != "" {
				incumbent = "naive-" + string(prec)
			} else if _, ok := timed[key{op, promoted.MatVecLoopName, ""}]; ok && strings.HasPrefix(op, "matmul/") {
				incumbent = promoted.MatVecLoopName
			} else if _, ok := timed[key{op, promoted.PerTokenName, ""}]; ok && op == ledger.OpAttentionBatch {
				incumbent = promoted.PerTokenName
			}
			if _, ok := timed[key{op, incumbent, ""}]; !ok {
				return "" // none timed in this run: nothing to compare with
			}
			return incumbent
		}
		type win struct {
			choice promoted.Choice
			speed  float64 // geometric mean of median ns over the judged shapes
		}
		judged := judgedShapes(op, shapes[op])
		var wins []win
		for _, ch := range byOp[op] {
			if only != "" && ch != only {
				continue
			}
			if _, ok := reg.Lookup(op, ch); !ok {
				continue // not in this binary: it could not be dispatched to
			}
			incumbent := incumbentFor(precision(ch))
			if incumbent == "" || ch == incumbent {
				continue
			}
			p := results.Promotion{Op: op, Challenger: ch, Incumbent: incumbent, Rule: rule, Promote: true}
			gatePassed := gate.Passed(gates, op, ch)
			var gainSum, logNs float64
			for _, s := range judged {
				ri, ok1 := timed[key{op, incumbent, s}]
				rc, ok2 := timed[key{op, ch, s}]
				if !ok1 || !ok2 {
					continue
				}
				d := rule.Decide(ri.Kernel.NsPerOp, rc.Kernel.NsPerOp, gatePassed)
				p.Shapes = append(p.Shapes, results.ShapeDecision{Shape: s, Decision: d})
				p.Evidence = append(p.Evidence, ri.ID, rc.ID)
				p.Promote = p.Promote && d.Promote
				gainSum += d.Gain
				logNs += math.Log(d.ChallengerMedian)
			}
			if len(p.Shapes) == 0 {
				continue
			}
			meanGain := gainSum / float64(len(p.Shapes))
			switch {
			case !gatePassed:
				p.Reason = "did not pass the gate at every shape of the run"
			case p.Promote:
				p.Reason = fmt.Sprintf("rule met at all %d shapes (mean gain %.1f%%)", len(p.Shapes), 100*meanGain)
			default:
				var lost []string
				for _, s := range p.Shapes {
					if !s.Decision.Promote {
						lost = append(lost, s.Shape)
					}
				}
				p.Reason = fmt.Sprintf("rule not met at %d of %d shapes (%s)", len(lost), len(p.Shapes), strings.Join(lost, ", "))
			}
			rec := b.Add(results.Record{Kind: results.KindPromotion, Promotion: &p})
			decisions = append(decisions, p)
			if p.Promote {
				cpu := ""
				if cpuOnly {
					cpu = vendor
				}
				wins = append(wins, win{promoted.Choice{Variant: ch, Evidence: rec.ID, Over: incumbent,
					Date: time.Now().UTC().Format("2006-01-02"), CPU: cpu}, logNs / float64(len(p.Shapes))})
			}
		}
		if len(wins) == 0 {
			continue
		}
		// Fastest first: the engine takes the first one this machine can run.
		sort.SliceStable(wins, func(i, j int) bool { return wins[i].speed < wins[j].speed })
		var list []promoted.Choice
		for _, w := range wins {
			list = append(list, w.choice)
		}
		for _, c := range out.Ops[op] {
			dup := false
			for _, w := range wins {
				dup = dup || (w.choice.Variant == c.Variant && w.choice.CPU == c.CPU)
			}
			if !dup {
				list = append(list, c)
			}
		}
		out.Ops[op] = list
	}
	return decisions, out
}

// judgedShapes returns the real model shapes among keys, or all keys when
// none is real.
func judgedShapes(op string, keys []string) []string {
	o, ok := ledger.LookupOp(op)
	if !ok {
		return keys
	}
	var real []string
	for _, k := range keys {
		if s, ok := o.Shape(k); ok && s.Real() {
			real = append(real, k)
		}
	}
	if len(real) == 0 {
		return keys
	}
	return real
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
