package record

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// Duration formats nanoseconds with a unit that keeps 3–4 significant digits.
func Duration(ns float64) string {
	switch a := math.Abs(ns); {
	case a >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

// KernelTable renders kernel records as a table: one row per op, shape and
// variant, with the speed-up over the op's naive variant at the same shape
// when it was timed in the same run.
func KernelTable(recs []Record) table.Writer {
	t := table.NewWriter()
	t.AppendHeader(table.Row{"op", "shape", "variant", "median", "p95", "CV", "95% CI", "GB/s", "GFLOP/s", "% BW", "× naive"})
	naive := map[string]float64{}
	for _, r := range recs {
		if k := r.Kernel; k != nil && k.Variant == "naive" {
			naive[r.RunID+" "+k.Op+" "+k.Shape] = k.Summary.Median
		}
	}
	for _, r := range recs {
		k := r.Kernel
		if k == nil {
			continue
		}
		s := k.Summary
		bw, speed := "–", "–"
		if k.BandwidthFraction > 0 {
			bw = fmt.Sprintf("%.0f%%", 100*k.BandwidthFraction)
		}
		if n, ok := naive[r.RunID+" "+k.Op+" "+k.Shape]; ok && s.Median > 0 {
			speed = fmt.Sprintf("%.2f", n/s.Median)
		}
		t.AppendRow(table.Row{k.Op, k.Label, k.Variant, Duration(s.Median), Duration(s.P95),
			fmt.Sprintf("%.1f%%", 100*s.CV), fmt.Sprintf("%s – %s", Duration(s.CILo), Duration(s.CIHi)),
			fmt.Sprintf("%.2f", k.GBps), fmt.Sprintf("%.2f", k.GFLOPS), bw, speed})
	}
	alignRight(t, 4, 11)
	return t
}

// GateTable renders gate verdicts: failures first, then passes.
func GateTable(recs []Record) table.Writer {
	t := table.NewWriter()
	t.AppendHeader(table.Row{"op", "variant", "shape", "outcome", "NMSE", "max-abs", "1 − cos", "error"})
	var gs []Record
	for _, r := range recs {
		if r.Gate != nil {
			gs = append(gs, r)
		}
	}
	sort.SliceStable(gs, func(i, j int) bool { return rank(gs[i]) < rank(gs[j]) })
	for _, r := range gs {
		g := r.Gate
		t.AppendRow(table.Row{g.Op, g.Variant, g.Shape, string(g.Outcome),
			fmt.Sprintf("%.2g", g.NMSE), fmt.Sprintf("%.2g", g.MaxAbs), fmt.Sprintf("%.2g", 1-g.Cosine), g.Error})
	}
	return t
}

func rank(r Record) int {
	switch r.Gate.Outcome {
	case "fail":
		return 0
	case "skip":
		return 2
	}
	return 1
}

// The end-to-end metrics of the baseline table, in order.
var baselineRows = []struct {
	label string
	match func(test string) bool
	lower bool // lower is better (times, memory)
}{
	{"decode tok/s", func(t string) bool { return strings.HasPrefix(t, "tg") }, false},
	{"prefill tok/s", func(t string) bool { return strings.HasPrefix(t, "pp") }, false},
	{"cold start", func(t string) bool { return t == "cold-start" }, true},
	{"peak RSS", func(t string) bool { return t == "peak-rss" }, true},
	{"sustained decode tok/s", func(t string) bool { return t == "sustained" }, false},
}

// BaselineTable renders end-to-end records in the original baseline.md
// layout: per metric, Damascus and llama.cpp median | p95 | stddev side by
// side with the ratio of medians. p95 is the worse tail: the 95th percentile
// of times and sizes, the 5th percentile of throughputs.
func BaselineTable(recs []Record) table.Writer {
	t := table.NewWriter()
	t.AppendHeader(table.Row{"metric", "test", "Damascus median", "p95", "stddev", "llama.cpp median", "p95", "stddev", "ratio D/L", "notes"})
	byEngine := map[string]map[string]*E2E{}
	var tests []string
	var prot *protocol.E2E // the run's, when its record is among recs
	for _, r := range recs {
		if r.Run != nil && r.Run.Protocol.E2E != nil {
			prot = r.Run.Protocol.E2E
		}
		if e := r.E2E; e != nil {
			if byEngine[e.Test] == nil {
				byEngine[e.Test] = map[string]*E2E{}
				tests = append(tests, e.Test)
			}
			byEngine[e.Test][e.Engine] = e
		}
	}
	for _, row := range baselineRows {
		found := false
		for _, test := range tests {
			if !row.match(test) {
				continue
			}
			found = true
			d, l := byEngine[test]["damascus"], byEngine[test]["llama.cpp"]
			cells := table.Row{row.label, test}
			cells = append(cells, e2eCells(d, row.lower)...)
			cells = append(cells, e2eCells(l, row.lower)...)
			ratio := "–"
			if d != nil && l != nil && l.Summary.Median != 0 {
				ratio = fmt.Sprintf("%.2f×", d.Summary.Median/l.Summary.Median)
			}
			notes := joinNotes(d, l)
			if r := PairedRatios(d, l); r != nil && !row.lower {
				notes = strings.TrimPrefix(notes+"; ", "; ") + pairedNote(r, prot, test)
			}
			cells = append(cells, ratio, notes)
			t.AppendRow(cells)
		}
		if !found {
			t.AppendRow(table.Row{row.label, "–", "–", "–", "–", "–", "–", "–", "–", "not measured in this run"})
		}
	}
	alignRight(t, 3, 9)
	return t
}

// pairedNote states the paired ratios r of test: one a round, or for the
// prefill and decode tests of a run with several repetitions per round
// (p.RepsPerRound), one a sample, paired by round and repetition, counted
// as rounds × reps.
func pairedNote(r []float64, p *protocol.E2E, test string) string {
	med, lo, hi := stats.Quantile(r, 0.5), r[0], r[len(r)-1]
	if p != nil && p.Reps() > 1 && (test == p.PromptTest() || test == p.GenTest()) && len(r)%p.Reps() == 0 {
		return fmt.Sprintf("per sample D/L (paired by round and repetition): median %.2f×, %.2f–%.2f over %d rounds × %d reps",
			med, lo, hi, len(r)/p.Reps(), p.Reps())
	}
	return fmt.Sprintf("per round D/L: median %.2f×, %.2f–%.2f over %d rounds", med, lo, hi, len(r))
}

// PairedRatios returns Damascus/llama.cpp sample by sample, sorted: the
// ledger interleaves the engines round by round, so sample i of each comes
// from the same round (and, with several repetitions per round, the same
// repetition of it: protocol.E2E.RepsPerRound) and their ratio cancels what
// drifted between rounds (the paired view of a noisy machine). nil unless
// both have the same number (≥ 2) of positive samples.
func PairedRatios(d, l *E2E) []float64 {
	if d == nil || l == nil || len(d.Samples) != len(l.Samples) || len(d.Samples) < 2 {
		return nil
	}
	r := make([]float64, len(d.Samples))
	for i, x := range d.Samples {
		if x <= 0 || l.Samples[i] <= 0 {
			return nil
		}
		r[i] = x / l.Samples[i]
	}
	slices.Sort(r)
	return r
}

// joinNotes states a note shared by both engines once.
func joinNotes(d, l *E2E) string {
	switch {
	case d == nil && l == nil:
		return ""
	case d == nil:
		return l.Notes
	case l == nil || l.Notes == d.Notes:
		return d.Notes
	}
	var notes []string
	for _, e := range []*E2E{d, l} {
		if e.Notes != "" {
			notes = append(notes, e.Engine+": "+e.Notes)
		}
	}
	return strings.Join(notes, "; ")
}

func e2eCells(e *E2E, lowerBetter bool) table.Row {
	if e == nil {
		return table.Row{"–", "–", "–"}
	}
	s := e.Summary
	p95 := s.P95
	if !lowerBetter {
		p95 = stats.Quantile(slices.Sorted(slices.Values(e.Samples)), 0.05)
	}
	return table.Row{formatUnit(s.Median, e.Unit), formatUnit(p95, e.Unit), formatUnit(s.Stddev, e.Unit)}
}

func formatUnit(v float64, unit string) string {
	switch unit {
	case "B":
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	case "s":
		return Duration(v * 1e9)
	}
	return fmt.Sprintf("%.2f", v)
}

// alignRight right-aligns columns from..to (1-based, inclusive).
func alignRight(t table.Writer, from, to int) {
	var cfg []table.ColumnConfig
	for c := from; c <= to; c++ {
		cfg = append(cfg, table.ColumnConfig{Number: c, Align: text.AlignRight})
	}
	t.SetColumnConfigs(cfg)
}
