package protocol

import (
	"fmt"
	"slices"

	"github.com/damascus-llm/damascus/protocol/stats"
)

// Rule is the promotion rule, applied at each shape. A challenger beats the
// incumbent at a shape when it passed the gate, its median time is lower,
// and either
//   - over at least MinRuns runs each, the samples' central ranges do not
//     overlap: the challenger's 95th-percentile time is below the incumbent's
//     5th-percentile time; or
//   - the Mann-Whitney U test rejects "same distribution" at p < Alpha and the
//     median gain is at least MinGain.
//
// `ledger promote` promotes a challenger that beats the incumbent at every
// real model shape timed in the run (at every shape if none is real).
type Rule struct {
	MinRuns int     `json:"min_runs"`
	Alpha   float64 `json:"alpha"`
	MinGain float64 `json:"min_gain"` // fraction of the incumbent's median time
}

// DefaultRule: ≥ 10 runs, p < 0.05, ≥ 5% gain.
func DefaultRule() Rule { return Rule{MinRuns: 10, Alpha: 0.05, MinGain: 0.05} }

// Decision is the rule's verdict with the numbers it rests on.
type Decision struct {
	Promote          bool    `json:"promote"`
	Reason           string  `json:"reason"`
	Gain             float64 `json:"gain"` // 1 − challenger/incumbent median time
	P                float64 `json:"p"`    // Mann-Whitney two-sided p-value
	IncumbentMedian  float64 `json:"incumbent_median"`
	ChallengerMedian float64 `json:"challenger_median"`
	IncumbentP5      float64 `json:"incumbent_p5"`
	ChallengerP95    float64 `json:"challenger_p95"`
	NonOverlapping   bool    `json:"non_overlapping"`
}

// Decide applies the rule to samples of a cost where lower is better (time
// per operation). gatePassed is the challenger's gate verdict.
func (r Rule) Decide(incumbent, challenger []float64, gatePassed bool) Decision {
	var d Decision
	if !gatePassed {
		d.Reason = "challenger did not pass the gate"
		return d
	}
	if len(incumbent) == 0 || len(challenger) == 0 {
		d.Reason = fmt.Sprintf("no samples (incumbent %d, challenger %d)", len(incumbent), len(challenger))
		return d
	}
	inc, ch := slices.Sorted(slices.Values(incumbent)), slices.Sorted(slices.Values(challenger))
	d.IncumbentMedian, d.ChallengerMedian = stats.Quantile(inc, 0.5), stats.Quantile(ch, 0.5)
	d.IncumbentP5, d.ChallengerP95 = stats.Quantile(inc, 0.05), stats.Quantile(ch, 0.95)
	d.Gain = 1 - d.ChallengerMedian/d.IncumbentMedian
	d.P = stats.MannWhitney(incumbent, challenger)
	enough := len(inc) >= r.MinRuns && len(ch) >= r.MinRuns
	d.NonOverlapping = enough && d.ChallengerP95 < d.IncumbentP5
	switch {
	case d.ChallengerMedian >= d.IncumbentMedian:
		d.Reason = fmt.Sprintf("median not faster (%.4g vs %.4g)", d.ChallengerMedian, d.IncumbentMedian)
	case d.NonOverlapping:
		d.Promote = true
		d.Reason = fmt.Sprintf("faster by %.1f%%, p95 %.4g below incumbent p5 %.4g over %d/%d runs", 100*d.Gain, d.ChallengerP95, d.IncumbentP5, len(ch), len(inc))
	case d.P < r.Alpha && d.Gain >= r.MinGain:
		d.Promote = true
		d.Reason = fmt.Sprintf("faster by %.1f%%, Mann-Whitney p = %.3g", 100*d.Gain, d.P)
	case d.P >= r.Alpha:
		d.Reason = fmt.Sprintf("not significant: p = %.3g ≥ %g and ranges overlap", d.P, r.Alpha)
	default:
		d.Reason = fmt.Sprintf("gain %.1f%% below %.0f%% and ranges overlap", 100*d.Gain, 100*r.MinGain)
	}
	if !enough && !d.Promote {
		d.Reason += fmt.Sprintf(" (non-overlap needs %d runs each; have %d and %d)", r.MinRuns, len(inc), len(ch))
	}
	return d
}
