package promote

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/e2e"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// BundleRequest asks whether an engine A/B's arm (`ledger ab`) earns its
// kernels a bundle in the preferences.
type BundleRequest struct {
	Recs       []record.Record // one A/B run
	Prefs      promoted.Preferences
	Reg        *ledger.Registry
	Rule       protocol.Rule
	Arm        string
	CPU        string // as Request's
	CPUOnly    bool
	FamilyOnly bool
	// Absent: the bundle's Absent features, each of which the run's
	// machine must have lacked (hidden or missing) as it recorded.
	Absent []string
}

// MaxBundleRSSGrowth is how much more peak RSS a bundle may take than the
// promoted kernels: its point is one copy of the weights, not two.
const MaxBundleRSSGrowth = 0.05

// DecideBundle applies the bundle rule to the arm: its kernels passed the
// run's gate everywhere, the rule (on time per token) promotes it at one
// test at least, no test is slower with p below the rule's alpha, and its
// median peak RSS is at most MaxBundleRSSGrowth above the promoted
// kernels'. The kernel rule's "every shape" does not carry over: a bundle
// changes several ops at once, and at a test where it changes nothing
// (decode, when it changes the prefill kernels) the two arms are the same
// engine, so only a measured loss may refuse it. b receives the decision
// (op "bundle", a shape per test); when promoted the returned preferences
// put the bundle first, replacing one of the same name and CPU.
func DecideBundle(req BundleRequest, b *record.Batch) (record.Promotion, promoted.Preferences, error) {
	out := copyPrefs(req.Prefs)
	var run *record.Run
	for _, r := range req.Recs {
		if r.Run != nil {
			run = r.Run
		}
	}
	if run == nil || run.Protocol.AB == nil {
		return record.Promotion{}, out, fmt.Errorf("not an engine A/B run (ledger ab)")
	}
	engine := e2e.ArmEngine(req.Arm)
	var overrides, small, chunk, dealRun string
	found := false
	for _, e := range run.Protocol.Engines {
		if e.Name == engine {
			overrides, small, chunk, dealRun, found = e.Overrides, e.SmallBatch, e.BatchChunk, e.DealRun, true
		}
	}
	switch {
	case !found || (overrides == "" && small == "" && chunk == "" && dealRun == ""):
		return record.Promotion{}, out, fmt.Errorf("the run has no arm %q", req.Arm)
	case small != "":
		return record.Promotion{}, out, fmt.Errorf("arm %s sets the small-batch crossover (%s): not a bundle of kernels (the crossover is promoted/smallbatch.go's, by hand with its evidence)", req.Arm, small)
	case dealRun != "":
		return record.Promotion{}, out, fmt.Errorf("arm %s sets the deal run (%s): not a bundle of kernels (a measured run goes in promoted/smallbatch.go, by hand with its evidence)", req.Arm, dealRun)
	case chunk != "" || overrides == "":
		return record.Promotion{}, out, fmt.Errorf("arm %s sets the batch chunk (%s): not a bundle of kernels (a measured chunk goes in promoted/smallbatch.go, by hand with its evidence)", req.Arm, chunk)
	}
	for _, f := range req.Absent {
		if present, known := runFeature(run, f); !known || present {
			return record.Promotion{}, out, fmt.Errorf("absent %s: the run's machine %s it (the bundle may only be limited to processors without a feature its evidence was measured without)",
				f, map[bool]string{true: "had", false: "does not record"}[known])
		}
	}
	kernels, err := promoted.ParseOverrides(overrides)
	if err != nil {
		return record.Promotion{}, out, err
	}
	for op, name := range kernels {
		if _, ok := req.Reg.Lookup(op, name); !ok {
			return record.Promotion{}, out, fmt.Errorf("%s:%s is not registered in this binary", op, name)
		}
	}
	gateOK, gateWhy := bundleGated(req.Recs, kernels)
	p := CompareArm(req.Recs, req.Arm, req.Rule, gateOK)
	if !gateOK {
		p.Promote, p.Reason = false, gateWhy
	}
	rec := b.Add(record.Record{Kind: record.KindPromotion, Promotion: &p})
	if p.Promote {
		nb := promoted.Bundle{Name: req.Arm, Kernels: kernels, Evidence: rec.ID, Over: "the promoted kernels",
			Date: time.Now().UTC().Format("2006-01-02"), CPU: EntryCPU(req.CPU, req.CPUOnly, req.FamilyOnly), Absent: slices.Clone(req.Absent)}
		list := []promoted.Bundle{nb}
		for _, old := range out.Bundles {
			if old.Name != nb.Name || old.CPU != nb.CPU {
				list = append(list, old)
			}
		}
		out.Bundles = list
	}
	return p, out, nil
}

// CompareArm judges an A/B arm against the promoted kernels test by test
// (the rule on time per token, gatePassed its gate verdict) and gives the
// bundle rule's verdict on the timings alone: promoted when the rule
// promotes it at one test at least, no test is slower with p below the
// rule's alpha and its median peak RSS is at most MaxBundleRSSGrowth above.
func CompareArm(recs []record.Record, arm string, rule protocol.Rule, gatePassed bool) record.Promotion {
	engine := e2e.ArmEngine(arm)
	p := record.Promotion{Op: "bundle", Challenger: arm, Incumbent: e2e.PromotedArm, Rule: rule}
	samples := map[string]map[string]*record.E2E{} // test → engine → record
	var tests []string
	for _, r := range recs {
		if r.E2E == nil || (r.E2E.Engine != engine && r.E2E.Engine != "damascus") {
			continue
		}
		if samples[r.E2E.Test] == nil {
			samples[r.E2E.Test] = map[string]*record.E2E{}
			tests = append(tests, r.E2E.Test)
		}
		samples[r.E2E.Test][r.E2E.Engine] = r.E2E
		if r.E2E.Engine == engine {
			p.Evidence = append(p.Evidence, r.ID)
		}
	}
	var wins, losses []string
	rssWhy := ""
	for _, t := range tests {
		inc, ch := samples[t]["damascus"], samples[t][engine]
		if inc == nil || ch == nil {
			continue
		}
		if t == "peak-rss" {
			if grow := ch.Summary.Median/inc.Summary.Median - 1; grow > MaxBundleRSSGrowth {
				rssWhy = fmt.Sprintf("peak RSS %.0f%% above the promoted kernels'", 100*grow)
			}
			continue
		}
		d := rule.Decide(perToken(inc.Samples), perToken(ch.Samples), gatePassed)
		p.Shapes = append(p.Shapes, record.ShapeDecision{Shape: t, Decision: d})
		switch {
		case d.Promote:
			wins = append(wins, t)
		case d.Gain < 0 && d.P < rule.Alpha:
			losses = append(losses, t)
		}
	}
	switch {
	case len(p.Shapes) == 0:
		p.Reason = "no test timed for both arms"
	case len(losses) > 0:
		p.Reason = "slower at " + strings.Join(losses, ", ")
	case rssWhy != "":
		p.Reason = rssWhy
	case len(wins) == 0:
		p.Reason = "the rule promotes it at no test"
	default:
		p.Promote = true
		p.Reason = "faster at " + strings.Join(wins, ", ") + ", slower at none"
	}
	return p
}

// bundleGated reports whether the run gated every kernel and each passed
// at every shape, with the first reason it did not.
func bundleGated(recs []record.Record, kernels map[string]string) (bool, string) {
	for _, op := range slices.Sorted(maps.Keys(kernels)) {
		n := 0
		for _, r := range recs {
			if g := r.Gate; g != nil && g.Op == op && g.Variant == kernels[op] {
				if g.Outcome != gate.Pass {
					return false, fmt.Sprintf("%s:%s did not pass the gate at %s", op, kernels[op], g.Shape)
				}
				n++
			}
		}
		if n == 0 {
			return false, fmt.Sprintf("%s:%s was not gated in the run", op, kernels[op])
		}
	}
	return true, ""
}

// perToken turns tok/s samples into seconds per token, the rule's cost
// (lower is better).
func perToken(tps []float64) []float64 {
	out := make([]float64, len(tps))
	for i, v := range tps {
		out[i] = math.Inf(1)
		if v > 0 {
			out[i] = 1 / v
		}
	}
	return out
}

// BundleSummary is one line per test of a decision: each arm's median
// tok/s and the rule's verdict, for the command's table.
func BundleSummary(p record.Promotion) []string {
	var lines []string
	for _, s := range p.Shapes {
		d := s.Decision
		lines = append(lines, fmt.Sprintf("%-8s %8.2f → %8.2f tok/s  %+6.1f%%  p %.3g", s.Shape, 1/d.IncumbentMedian, 1/d.ChallengerMedian, 100*(d.IncumbentMedian/d.ChallengerMedian-1), d.P))
	}
	return lines
}

// PairedSummary states, for each timed test of the run's arm, its tok/s
// over the promoted kernels' round by round (the arms run interleaved, so
// a round's ratio cancels what the machine did between rounds): the median
// and the range over the rounds. Informational: the bundle rule decides on
// the unpaired samples.
func PairedSummary(recs []record.Record, arm string) []string {
	engine := e2e.ArmEngine(arm)
	byTest := map[string]map[string]*record.E2E{}
	var tests []string
	for _, r := range recs {
		if r.E2E == nil || r.E2E.Test == "peak-rss" || (r.E2E.Engine != engine && r.E2E.Engine != "damascus") {
			continue
		}
		if byTest[r.E2E.Test] == nil {
			byTest[r.E2E.Test] = map[string]*record.E2E{}
			tests = append(tests, r.E2E.Test)
		}
		byTest[r.E2E.Test][r.E2E.Engine] = r.E2E
	}
	var lines []string
	for _, t := range tests {
		if r := record.PairedRatios(byTest[t][engine], byTest[t]["damascus"]); r != nil {
			lines = append(lines, fmt.Sprintf("%-8s paired by round: median %.3f×, %.3f–%.3f over %d rounds", t, stats.Quantile(r, 0.5), r[0], r[len(r)-1], len(r)))
		}
	}
	return lines
}

// runFeature reports whether the run's machine recorded feature f present,
// and whether it recorded f at all.
func runFeature(run *record.Run, f string) (present, known bool) {
	for _, c := range run.Protocol.Machine.CPU.Features {
		if c.Name == f {
			return c.Present, true
		}
	}
	return false, false
}
