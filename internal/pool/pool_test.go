package pool

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCoversEveryWorker(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		p := New(n)
		var hits [8]atomic.Int32
		fn := func(w, workers int) {
			if workers != n {
				t.Errorf("n=%d: fn saw %d workers", n, workers)
			}
			hits[w].Add(1)
		}
		for range 1000 {
			p.Run(fn)
		}
		p.Close()
		checkHits(t, hits[:n], 1000, fmt.Sprintf("n=%d: worker", n))
	}
}

// Runs spaced out long enough for the workers to park must still complete.
func TestRunAfterParking(t *testing.T) {
	p := New(3)
	defer p.Close()
	var sum atomic.Int64
	fn := func(w, _ int) { sum.Add(int64(w + 1)) }
	for range 5 {
		time.Sleep(20 * time.Millisecond) // long enough for the workers to park
		p.Run(fn)
	}
	if got := sum.Load(); got != 5*(1+2+3) {
		t.Fatalf("sum %d, want %d", got, 5*6)
	}
}

// A Run that reaches a worker late, after the worker has already seen the
// new generation, run fn and parked, sends it a stale wake; fn must still
// run exactly once per worker and Run.
func TestStaleWake(t *testing.T) {
	p := New(3)
	defer p.Close()
	var hits [3]atomic.Int32
	fn := func(w, _ int) { hits[w].Add(1) }
	p.Run(fn) // workers now spinning on the first generation
	delay := true
	beforeWake = func(w int) {
		if w == 2 && delay {
			delay = false
			// Worker 2 sees the new generation, runs fn and parks meanwhile.
			for deadline := time.Now().Add(10 * time.Second); p.state[2].Load() != parked && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
	}
	defer func() { beforeWake = nil }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			p.Run(fn)
			time.Sleep(50 * time.Millisecond) // a stale wake acts before the next generation
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return: a stale wake ran fn twice")
	}
	checkHits(t, hits[:], 4, "worker")
}

// A pool set below its workers runs fn on the first Size() only, passing
// that size, and grows back; resizes between Runs, spaced or back to back
// (workers still spinning, or parked), never run fn twice or leave Run
// waiting. With a Dealer, the chunks of a smaller Run are each dealt once.
func TestSetSize(t *testing.T) {
	p := New(6)
	defer p.Close()
	d := NewDealer(p.Cap())
	var hits [6]atomic.Int32
	sizes := []int{6, 2, 2, 5, 1, 6, 3, 6, 2}
	want := make([]int32, 6)
	for i, k := range sizes {
		if err := p.SetSize(k); err != nil {
			t.Fatal(err)
		}
		if p.Size() != k || p.Cap() != 6 {
			t.Fatalf("after SetSize(%d): Size %d, Cap %d", k, p.Size(), p.Cap())
		}
		if i%3 == 2 {
			time.Sleep(20 * time.Millisecond) // long enough for the workers to park
		}
		for range 200 {
			chunks := make([]atomic.Int32, 50)
			d.Reset(len(chunks), p.Size())
			p.Run(func(w, n int) {
				if n != k || w >= k {
					t.Errorf("size %d: fn(%d, %d)", k, w, n)
				}
				hits[w].Add(1)
				for {
					c, ok := d.Next(w)
					if !ok {
						return
					}
					chunks[c].Add(1)
				}
			})
			checkHits(t, chunks, 1, fmt.Sprintf("size %d: chunk", k))
		}
		for w := range k {
			want[w] += 200
		}
	}
	for w := range hits {
		if got := hits[w].Load(); got != want[w] {
			t.Errorf("worker %d ran %d times, want %d", w, got, want[w])
		}
	}
	for _, k := range []int{0, -1, 7} {
		if err := p.SetSize(k); err == nil {
			t.Errorf("SetSize(%d) of a pool of 6: no error", k)
		}
	}
	if p.Size() != 2 {
		t.Errorf("a refused SetSize changed Size to %d", p.Size())
	}
}

// checkHits reports every counter of hits (named what and its index) that
// does not read want.
func checkHits(t *testing.T, hits []atomic.Int32, want int32, what string) {
	t.Helper()
	for i := range hits {
		if got := hits[i].Load(); got != want {
			t.Errorf("%s %d: %d times, want %d", what, i, got, want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct{ n, workers, align int }{{10, 3, 1}, {100, 4, 8}, {5, 8, 1}, {257, 2, 32}, {0, 3, 4}} {
		covered := 0
		prev := 0
		for w := range c.workers {
			lo, hi := Split(c.n, w, c.workers, c.align)
			if lo != prev || hi < lo {
				t.Fatalf("%+v: worker %d got [%d,%d) after %d", c, w, lo, hi, prev)
			}
			if hi < c.n && hi%c.align != 0 {
				t.Fatalf("%+v: worker %d ends at %d, not aligned", c, w, hi)
			}
			covered += hi - lo
			prev = hi
		}
		if covered != c.n {
			t.Fatalf("%+v: covered %d", c, covered)
		}
	}
}

type addTask struct {
	x   []float32
	run func(w, n int)
}

func (a *addTask) do(w, n int) {
	lo, hi := Split(len(a.x), w, n, 16)
	for i := lo; i < hi; i++ {
		a.x[i]++
	}
}

// BenchmarkDispatch measures the cost of one Run with a trivial body: the
// fixed overhead every parallel op of the forward pass pays.
func BenchmarkDispatch(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("variant=spin-park/workers=%d", n), func(b *testing.B) {
			p := New(n)
			defer p.Close()
			task := &addTask{x: make([]float32, 64)}
			task.run = task.do
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Run(task.run)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/dispatch")
		})
	}
}
