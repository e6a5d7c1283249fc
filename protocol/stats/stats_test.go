package stats

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	v := []float64{10, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	s := Summarize(v)
	if s.N != 10 || s.Median != 5.5 || s.Min != 1 || s.Max != 10 || s.Mean != 5.5 {
		t.Errorf("summary %+v", s)
	}
	if want := 9 + 0.55; math.Abs(s.P95-want) > 1e-12 {
		t.Errorf("p95 = %v, want %v", s.P95, want)
	}
	if want := math.Sqrt(82.5 / 9); math.Abs(s.Stddev-want) > 1e-12 {
		t.Errorf("stddev = %v, want %v", s.Stddev, want)
	}
	if !(s.CILo <= s.Median && s.Median <= s.CIHi && s.CILo >= 1 && s.CIHi <= 10) {
		t.Errorf("CI [%v, %v] does not bracket the median %v", s.CILo, s.CIHi, s.Median)
	}
	if v[0] != 10 {
		t.Error("Summarize reordered its input")
	}
	few := Summarize([]float64{3, 1, 2})
	if few.CILo != 1 || few.CIHi != 3 || len(few.Warnings) == 0 {
		t.Errorf("3 values: CI [%v, %v], warnings %v; want the range and a warning", few.CILo, few.CIHi, few.Warnings)
	}
	if s := Summarize(nil); s.N != 0 || s.Median != 0 {
		t.Error("empty sample")
	}
}

func TestMannWhitney(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b := []float64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if p := MannWhitney(a, b); p >= 0.001 {
		t.Errorf("separated samples: p = %v", p)
	}
	if p := MannWhitney(a, a); p < 0.5 {
		t.Errorf("identical samples: p = %v", p)
	}
}
