package llamacpp

import (
	"sync"
	"syscall"
	"testing"
)

// TestComputeThreadIsOne: calls from many goroutines all run on one OS
// thread, and none of them on the caller's.
func TestComputeThreadIsOne(t *testing.T) {
	tids := make(chan int, 64)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			onComputeThread(func() { tids <- syscall.Gettid() })
		}()
	}
	wg.Wait()
	close(tids)
	first := -1
	for tid := range tids {
		if first == -1 {
			first = tid
		}
		if tid != first {
			t.Fatalf("compute calls ran on threads %d and %d", first, tid)
		}
	}
	onComputeThread(func() {})
	var mine int
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A goroutine of this package's callers may share threads with
		// others, but never the locked one.
		for range 100 {
			mine = syscall.Gettid()
			if mine == first {
				t.Errorf("a plain goroutine ran on the compute thread %d", first)
				return
			}
		}
	}()
	<-done
}
