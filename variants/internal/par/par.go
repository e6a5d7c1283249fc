// Package par shares a loop's iterations among goroutines, for the
// repacks that lay out a model's weights at load (hundreds of megabytes:
// one goroutine took seconds).
package par

import (
	"runtime"
	"sync"
)

// Ranges calls f on n iterations split into GOMAXPROCS contiguous ranges
// [lo, hi), each in its own goroutine, and returns when all are done.
func Ranges(n int, f func(lo, hi int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { f(w*n/workers, (w+1)*n/workers) })
	}
	wg.Wait()
}
