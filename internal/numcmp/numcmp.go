// Package numcmp measures, for tests, how far a computed vector is from a
// reference one.
package numcmp

import "math"

// RelRMSE is the RMS error of got against want, relative to want's RMS.
func RelRMSE(want, got []float32) float64 {
	var se, ss float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		se += d * d
		ss += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(se / ss)
}
