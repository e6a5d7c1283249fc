// Package numcmp measures, for tests and the ledger's conformance gate, how
// far a computed vector is from a reference one.
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

// FirstDiff is the first index at which a and b differ (b at least as long
// as a), or -1 when a is a prefix of b: where a bit-exactness check reports
// its first mismatch.
func FirstDiff[T comparable](a, b []T) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
