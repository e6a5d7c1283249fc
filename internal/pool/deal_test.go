package pool

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Every chunk is handed out exactly once, whatever the workers' speeds.
func TestDealerCoversEveryChunkOnce(t *testing.T) {
	for _, c := range []struct{ n, workers int }{{0, 2}, {1, 2}, {7, 2}, {100, 2}, {1000, 3}, {5, 8}} {
		p := New(c.workers)
		d := NewDealer(c.workers)
		hits := make([]atomic.Int32, c.n)
		var per [8]int
		for range 20 {
			d.Reset(c.n, c.workers)
			p.Run(func(w, _ int) {
				for {
					i, ok := d.Next(w)
					if !ok {
						return
					}
					hits[i].Add(1)
					per[w]++
					if w == 0 {
						time.Sleep(time.Microsecond) // a slow worker: the others steal from it
					}
				}
			})
		}
		p.Close()
		checkHits(t, hits, 20, fmt.Sprintf("%+v: chunk", c))
	}
}

// NextRun hands out every chunk exactly once too, in runs of a quarter of
// what is left of the worker's share (1 to most), single chunks when it
// steals.
func TestDealerRunsCoverEveryChunkOnce(t *testing.T) {
	for _, c := range []struct{ n, workers, most int }{{0, 2, 4}, {1, 2, 4}, {7, 2, 1}, {100, 2, 4}, {1000, 3, 8}, {5, 8, 2}} {
		p := New(c.workers)
		d := NewDealer(c.workers)
		hits := make([]atomic.Int32, c.n)
		for range 20 {
			d.Reset(c.n, c.workers)
			p.Run(func(w, _ int) {
				for {
					lo, hi, ok := d.NextRun(w, c.most)
					if !ok {
						return
					}
					if hi <= lo || hi-lo > c.most {
						t.Errorf("%+v: run [%d, %d)", c, lo, hi)
						return
					}
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
					if w == 0 {
						time.Sleep(time.Microsecond)
					}
				}
			})
		}
		p.Close()
		checkHits(t, hits, 20, fmt.Sprintf("%+v: chunk", c))
	}
	d := NewDealer(1)
	d.Reset(40, 1)
	var runs []int
	for {
		lo, hi, ok := d.NextRun(0, 4)
		if !ok {
			break
		}
		runs = append(runs, hi-lo)
	}
	if got := fmt.Sprint(runs); got != "[4 4 4 4 4 4 4 3 2 1 1 1 1 1 1 1]" {
		t.Errorf("runs of a share of 40, at most 4: %s", got)
	}
}

// A worker takes its own share front to back while nobody steals.
func TestDealerOwnShareInOrder(t *testing.T) {
	d := NewDealer(2)
	d.Reset(10, 2)
	for want := range 5 {
		if i, ok := d.Next(0); !ok || i != want {
			t.Fatalf("chunk %d, %v; want %d", i, ok, want)
		}
	}
	// Worker 0 is done with its share and steals worker 1's last chunk.
	if i, ok := d.Next(0); !ok || i != 9 {
		t.Fatalf("steal: chunk %d, %v; want 9", i, ok)
	}
	for want := 5; want < 9; want++ {
		if i, ok := d.Next(1); !ok || i != want {
			t.Fatalf("worker 1: chunk %d, %v; want %d", i, ok, want)
		}
	}
	if _, ok := d.Next(1); ok {
		t.Fatal("a chunk dealt after all were taken")
	}
}

func BenchmarkDealerNext(b *testing.B) {
	d := NewDealer(2)
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(1<<20, 1)
		for {
			if _, ok := d.Next(0); !ok {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(1<<20), "ns/chunk")
}
