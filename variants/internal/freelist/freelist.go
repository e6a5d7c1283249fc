// Package freelist keeps kernels' per-call scratch buffers between calls.
// A sync.Pool would not do: every GC empties it, and reallocating megabytes
// of panels and activation packs per call shows up in the timings.
package freelist

import "sync"

// A List holds up to 64 free *T (beyond any sane thread count); its zero
// value is ready to use.
type List[T any] struct {
	mu   sync.Mutex
	free []*T
}

// Get returns a free *T, or a new zero one.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		t := l.free[n-1]
		l.free = l.free[:n-1]
		return t
	}
	return new(T)
}

// Put gives t back for a later Get.
func (l *List[T]) Put(t *T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) < 64 {
		l.free = append(l.free, t)
	}
}
