// Package stats summarizes timing samples the way the protocol states:
// median with a distribution-free 95% confidence interval and the
// Mann-Whitney U test (both from golang.org/x/perf/benchmath, as benchstat
// computes them), plus p95, mean, standard deviation and coefficient of
// variation.
package stats

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Confidence is the level of the reported intervals.
const Confidence = 0.95

// Summary describes one sample.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"` // sample standard deviation (n−1)
	CV     float64 `json:"cv"`     // Stddev/Mean
	// CILo and CIHi bound the median at Confidence (order statistics; with
	// fewer than 6 values the interval is the whole range and a warning says so).
	CILo     float64  `json:"ci_lo"`
	CIHi     float64  `json:"ci_hi"`
	Warnings []string `json:"warnings,omitempty"`
}

// Summarize computes the summary of values (in any unit). An empty sample
// gives the zero Summary.
func Summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	s := Summary{N: len(sorted), Min: sorted[0], Max: sorted[len(sorted)-1], P95: Quantile(sorted, 0.95)}
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	s.Mean = sum / float64(s.N)
	if s.N > 1 {
		var ss float64
		for _, v := range sorted {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.Stddev = math.Sqrt(ss / float64(s.N-1))
	}
	if s.Mean != 0 {
		s.CV = s.Stddev / math.Abs(s.Mean)
	}
	sum95 := benchmath.AssumeNothing.Summary(benchmath.NewSample(sorted, &benchmath.DefaultThresholds), Confidence)
	s.Median, s.CILo, s.CIHi = sum95.Center, sum95.Lo, sum95.Hi
	// Too few values for the confidence asked: benchmath reports an infinite
	// interval (and a warning). JSON cannot hold infinities; the sample's
	// range is the honest finite stand-in.
	if math.IsInf(s.CILo, 0) {
		s.CILo = s.Min
	}
	if math.IsInf(s.CIHi, 0) {
		s.CIHi = s.Max
	}
	for _, w := range sum95.Warnings {
		s.Warnings = append(s.Warnings, w.Error())
	}
	return s
}

// Quantile returns the q-quantile of sorted values by linear interpolation
// between order statistics (Hyndman & Fan type 7, as R and NumPy default).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// MannWhitney returns the two-sided p-value of the Mann-Whitney U test that
// a and b come from the same distribution (exact for small samples). It is 1
// when either sample is too small for the test to say anything.
func MannWhitney(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 1
	}
	c := benchmath.AssumeNothing.Compare(
		benchmath.NewSample(slices.Clone(a), &benchmath.DefaultThresholds),
		benchmath.NewSample(slices.Clone(b), &benchmath.DefaultThresholds))
	return c.P
}
