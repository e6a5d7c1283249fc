package llamacpp

import (
	"runtime"
	"sync"
)

// computeThread is the one OS thread that enters llama.cpp's compute in this
// process. ggml's AMX kernels load their tile configuration once per thread
// and keep it; Damascus's AMX kernels release the tiles (TILERELEASE) when
// they return. Were both to run on one thread — Go moves goroutines between
// threads freely — ggml's next tile instruction would fault (SIGILL). A
// locked thread runs nothing but the calls sent to it, so no Damascus kernel
// ever runs there; ggml's own worker threads never run Go code.
var computeThread struct {
	once sync.Once
	work chan func()
}

// onComputeThread runs f on the compute thread and waits for it.
func onComputeThread(f func()) {
	computeThread.once.Do(func() {
		computeThread.work = make(chan func())
		go func() {
			runtime.LockOSThread() // for good: the thread belongs to ggml
			for f := range computeThread.work {
				f()
			}
		}()
	})
	done := make(chan struct{})
	computeThread.work <- func() {
		defer close(done)
		f()
	}
	<-done
}
