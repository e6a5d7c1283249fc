// Package pool is a persistent worker pool for the forward pass: n goroutines
// started once, woken by a barrier-style dispatch for every parallel op. A
// dispatch allocates nothing; workers spin briefly before parking, so the
// back-to-back ops of one token find them awake.
package pool

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// spinLimit is how many polls a worker makes before parking. Ops of one token
// follow each other within microseconds; between tokens workers park.
const spinLimit = 20000

const (
	spinning int32 = iota
	parked
)

// genBits of the generation word carry the Run's size, so a worker learns
// whether it takes part from the same load that tells it a Run began.
const genBits = 16

// MaxWorkers is the most workers a Pool starts.
const MaxWorkers = 1<<genBits - 1

// A Pool runs a function on Size() workers at once; the caller of Run is
// worker 0. A Pool's methods must not be called concurrently.
//
// Size can be set below the workers started (Cap) between Runs: the others
// stay parked. A bench fills a long KV cache on many cores, then times the
// decode on few, in one context.
type Pool struct {
	n       int // workers started
	size    int // workers a Run uses, 1..n
	fn      func(worker, n int)
	gen     atomic.Uint64 // per Run: a count above genBits, that Run's size below
	pending atomic.Int32  // workers (other than the caller) still running fn
	state   []atomic.Int32
	wake    []chan struct{}
	quit    atomic.Bool
	// yieldEvery is the polls a spinning goroutine makes per Gosched.
	yieldEvery int
	wg         sync.WaitGroup
}

// New starts a pool of n workers (n-1 goroutines plus the caller); n < 1
// means 1, n > MaxWorkers means MaxWorkers.
func New(n int) *Pool {
	n = min(max(n, 1), MaxWorkers)
	p := &Pool{n: n, size: n, state: make([]atomic.Int32, n), wake: make([]chan struct{}, n), yieldEvery: 64}
	if n > runtime.GOMAXPROCS(0) {
		p.yieldEvery = 1
	}
	for w := 1; w < n; w++ {
		p.wake[w] = make(chan struct{}, 1)
		p.wg.Add(1)
		go p.worker(w, 0) // gen is 0 until the first Run, whenever the goroutine starts
	}
	return p
}

// Size is the number of workers a Run uses, the caller included.
func (p *Pool) Size() int { return p.size }

// Cap is the number of workers started: the most SetSize takes.
func (p *Pool) Cap() int { return p.n }

// SetSize sets the workers the next Runs use, 1..Cap(); the others park.
func (p *Pool) SetSize(k int) error {
	if k < 1 || k > p.n {
		return fmt.Errorf("pool: %d workers asked of a pool of %d", k, p.n)
	}
	p.size = k
	return nil
}

// Run calls fn(w, n) on every worker w < n = Size() and returns when all
// have returned. fn should be a value made once (a method value stored in
// a field), so the call allocates nothing.
func (p *Pool) Run(fn func(worker, n int)) {
	if p.size == 1 {
		fn(0, 1)
		return
	}
	p.fn = fn
	p.pending.Store(int32(p.size - 1))
	p.gen.Store((p.gen.Load()>>genBits+1)<<genBits | uint64(p.size))
	for w := 1; w < p.size; w++ {
		if beforeWake != nil {
			beforeWake(w)
		}
		if p.state[w].Swap(spinning) == parked {
			p.wake[w] <- struct{}{}
		}
	}
	fn(0, p.size)
	for i := 0; p.pending.Load() != 0; i++ {
		p.spin(i)
	}
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	if p.n == 1 || p.quit.Swap(true) {
		return
	}
	p.gen.Add(1 << genBits) // every worker, parked or not, sees a new generation
	for w := 1; w < p.n; w++ {
		if p.state[w].Swap(spinning) == parked {
			p.wake[w] <- struct{}{}
		}
	}
	p.wg.Wait()
}

func (p *Pool) worker(w int, seen uint64) {
	defer p.wg.Done()
	spin := true
	for {
		p.await(w, seen, spin)
		seen = p.gen.Load()
		if p.quit.Load() {
			return
		}
		size := int(seen & MaxWorkers)
		if spin = w < size; !spin {
			continue // not in this Run: park at once, woken by a Run that has us
		}
		p.fn(w, size)
		p.pending.Add(-1)
	}
}

// await returns once gen has moved past seen: first by polling (unless
// spin is false), then parked on the worker's channel. The state word
// settles the race with Run: whoever swaps it second learns the other's
// intent.
//
// A wake can be stale: Run swaps the workers' states one after another, and
// a worker it reaches late (its thread descheduled, say) may already have
// seen the new generation, run fn and parked again; Run then finds it
// parked and sends a token meant for a wait that is over. Returning on that
// token would run fn twice for one generation and drive pending below zero,
// leaving Run to spin forever, so every wake re-checks gen.
func (p *Pool) await(w int, seen uint64, spin bool) {
	for {
		for i := 0; spin && i < spinLimit; i++ {
			if p.gen.Load() != seen {
				return
			}
			p.spin(i)
		}
		p.state[w].Store(parked)
		if p.gen.Load() != seen && p.state[w].CompareAndSwap(parked, spinning) {
			return // a Run came in between; it saw us spinning and sent nothing
		}
		<-p.wake[w]
		if p.gen.Load() != seen {
			return
		}
	}
}

// beforeWake, when set by a test, runs before Run looks at worker w's state:
// a stand-in for the caller's thread being descheduled there.
var beforeWake func(w int)

// spin is one poll's pause. With more workers than Ps, a poll that keeps
// its P starves the worker it waits for: every poll yields then.
func (p *Pool) spin(i int) {
	if i%p.yieldEvery == p.yieldEvery-1 {
		runtime.Gosched()
	}
}

// Split returns the half-open share [lo, hi) of n items for worker w of
// workers, in chunks that are multiples of align (the last may be shorter).
func Split(n, w, workers, align int) (lo, hi int) {
	align = max(align, 1)
	chunks := (n + align - 1) / align
	per, extra := chunks/workers, chunks%workers
	c0 := w*per + min(w, extra)
	c1 := c0 + per
	if w < extra {
		c1++
	}
	return min(c0*align, n), min(c1*align, n)
}
