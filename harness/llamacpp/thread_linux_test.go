package llamacpp

import (
	"sync"
	"syscall"
	"testing"
)

// TestComputeThreadIsOne: calls from many goroutines all run on one OS
// thread, which runs nothing else.
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
	// Other goroutines never run on the locked thread.
	done := make(chan int)
	go func() { done <- syscall.Gettid() }()
	if tid := <-done; tid == first {
		t.Errorf("a plain goroutine ran on the compute thread %d", first)
	}
}
