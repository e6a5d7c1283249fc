package gounrolled

import (
	"math"
	"testing"
)

func TestExpf(t *testing.T) {
	var worst float64
	for x := float32(-110); x < 95; x += 0.00731 {
		got, want := float64(expf(x)), math.Exp(float64(x))
		switch {
		case want > math.MaxFloat32:
			if !math.IsInf(got, 1) {
				t.Fatalf("expf(%v) = %v, want +Inf", x, got)
			}
			continue
		case want < 0x1p-126: // subnormal results: absolute error only
			if math.Abs(got-want) > 0x1p-149 {
				t.Fatalf("expf(%v) = %v, want %v", x, got, want)
			}
			continue
		}
		worst = math.Max(worst, math.Abs(got-want)/want)
	}
	if worst > 3e-7 {
		t.Fatalf("worst relative error %.3g, want at most 3e-7", worst)
	}
	t.Logf("worst relative error %.3g", worst)
	if got := expf(float32(math.NaN())); got == got {
		t.Fatalf("expf(NaN) = %v", got)
	}
}
