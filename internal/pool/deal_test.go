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
