package pool

import "sync/atomic"

// A Dealer hands out the chunks 0..n-1 of one parallel op to the workers
// running it, so that a worker slowed down (a busy sibling vCPU, a page
// walk, a late start) does not hold the others at the barrier. Each worker
// owns a contiguous share, as Split would give it, and takes its chunks in
// order from the front, keeping its memory stream sequential; a worker whose
// share is done steals single chunks from the back of the others' shares.
//
// Reset is called by the dispatching goroutine before Run (Run publishes
// it); Next by the workers inside the Run. A Dealer allocates nothing after
// NewDealer.
type Dealer struct {
	shares  []share
	workers int // the last Reset's: the shares Next steals from
}

// share is one worker's remaining chunks [next, end), packed into one word
// so that the owner taking the front and a thief taking the back agree
// through a single compare-and-swap; padded to its own cache line.
type share struct {
	v atomic.Uint64
	_ [56]byte
}

func pack(next, end int) uint64       { return uint64(uint32(next)) | uint64(uint32(end))<<32 }
func unpack(v uint64) (next, end int) { return int(uint32(v)), int(uint32(v >> 32)) }

// NewDealer makes a dealer for up to workers workers.
func NewDealer(workers int) *Dealer { return &Dealer{shares: make([]share, max(workers, 1))} }

// Reset deals n chunks (n < 2³¹) to workers workers in contiguous shares.
func (d *Dealer) Reset(n, workers int) {
	workers = min(max(workers, 1), len(d.shares))
	d.workers = workers
	for w := range workers {
		lo, hi := Split(n, w, workers, 1)
		d.shares[w].v.Store(pack(lo, hi))
	}
}

// NextRun returns the next chunks [lo, hi) for worker w, or false when
// every chunk has been handed out: from its own share a quarter of what is
// left of it, 1 to most chunks (guided self-scheduling: long calls while
// much is left, single chunks near the end, one compare-and-swap each),
// else a single chunk stolen from the back of another's.
func (d *Dealer) NextRun(w, most int) (lo, hi int, ok bool) {
	own := &d.shares[w].v
	for {
		v := own.Load()
		next, end := unpack(v)
		if next >= end {
			break
		}
		n := min(max((end-next)/4, 1), most)
		if own.CompareAndSwap(v, pack(next+n, end)) {
			return next, next + n, true
		}
	}
	c, ok := d.steal(w)
	return c, c + 1, ok
}

// Next returns the next chunk for worker w, or false when every chunk has
// been handed out.
func (d *Dealer) Next(w int) (int, bool) {
	c, _, ok := d.NextRun(w, 1)
	return c, ok
}

// steal takes a single chunk from the back of another worker's share.
func (d *Dealer) steal(w int) (int, bool) {
	for o := 1; o < d.workers; o++ {
		s := &d.shares[(w+o)%d.workers].v
		for {
			v := s.Load()
			next, end := unpack(v)
			if next >= end {
				break
			}
			if s.CompareAndSwap(v, pack(next, end-1)) {
				return end - 1, true
			}
		}
	}
	return 0, false
}
