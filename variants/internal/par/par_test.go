package par

import (
	"sync/atomic"
	"testing"
)

// TestRangesCoverEachOnce: every iteration is visited once, for counts
// below, at and above the number of goroutines (and none for 0).
func TestRangesCoverEachOnce(t *testing.T) {
	for _, n := range []int{0, 1, 3, 64, 1001} {
		seen := make([]atomic.Int32, n)
		Ranges(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n=%d: iteration %d visited %d times", n, i, c)
			}
		}
	}
}
