//go:build !noasm

package avx512

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/internal/hugemem"
	"github.com/damascus-llm/damascus/internal/pool"
)

// BenchmarkDecodeStream times the 3B decode's weight stream as the engine
// reads it (issue 20): 28 layers of dispatches (Q K V, O, gate up, down)
// and the tied output matrix, every matrix a Q4_K r16 one (1.86 GB in all,
// on huge pages), each dispatch's 256 KiB chunks split between 2 workers in
// contiguous shares, a barrier after each. Modes, interleaved round by
// round with the e2e round probe (the memory probe over its own 512 MiB,
// best of its sweeps, two repeats):
//
//	one-nta8k  the Zen 5 bundle's kernel, a chunk a call (the engine)
//	one-nta4k  the same 4 KiB ahead; one-nta2k 2 KiB
//	pair-nta4k each worker's share as two far-apart streams, its halves, a
//	           chunk of each a call (q4kr16Dot2N), what the probe's
//	           two-streams sweep reads
//
// The medians over DAMASCUS_STREAM_ROUNDS rounds (default 10) are reported
// as GB/s metrics beside the probe's, so one run says how much of the
// probe's bandwidth the kernels reach in the engine's pattern without the
// engine's other work.
func BenchmarkDecodeStream(b *testing.B) {
	if !cpufeat.Has("avx512vnni") || !cpufeat.Has("avx512bw") {
		b.Skip("needs AVX-512 VNNI and BW")
	}
	rounds := 10
	if s := os.Getenv("DAMASCUS_STREAM_ROUNDS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			b.Fatalf("DAMASCUS_STREAM_ROUNDS=%q: want a positive number", s)
		}
	}
	sim, err := newStreamSim(2)
	if err != nil {
		b.Skip(err)
	}
	defer sim.close()
	modes := []struct {
		name string
		run  func() time.Duration
	}{
		{"one-nta8k", func() time.Duration { return sim.sweep(false, 8<<10) }},
		{"one-nta4k", func() time.Duration { return sim.sweep(false, 4<<10) }},
		{"one-nta2k", func() time.Duration { return sim.sweep(false, 2<<10) }},
		{"pair-nta4k", func() time.Duration { return sim.sweep(true, 4<<10) }},
		{"probe", nil},
	}
	sim.sweep(false, 8<<10) // fault in, warm up
	for b.Loop() {
		got := map[string][]float64{}
		for r := range rounds {
			for i := range modes {
				m := modes[(i+r)%len(modes)] // each mode in every place of the order
				if m.run != nil {
					got[m.name] = append(got[m.name], float64(sim.bytes)/m.run().Seconds()/1e9)
					continue
				}
				p := roofline.MemoryRead(roofline.Options{MemBytes: 512 << 20, Threads: []int{2}, Repeats: 2}, roofline.PagesHuge)[0]
				if p.Skipped != "" {
					b.Skip(p.Skipped)
				}
				got[m.name] = append(got[m.name], p.Best)
			}
		}
		probe := got["probe"]
		for _, m := range modes {
			s := got[m.name]
			b.ReportMetric(median(s), "GB/s-"+m.name)
			ratios := make([]float64, len(s))
			for i := range s {
				ratios[i] = s[i] / probe[i]
			}
			b.Logf("%-10s %.1f GB/s median, %.0f%% of the probe (median of rounds), per round %.1f", m.name, median(s), 100*median(ratios), s)
		}
	}
}

func median(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// streamSim is the 3B decode's Q4_K weight stream laid out in one huge-page
// region, dispatch by dispatch.
type streamSim struct {
	region *hugemem.Region
	bytes  int
	disp   [][]simMat
	pool   *pool.Pool
	x      []byte
	dst    []float32
	// the current dispatch and mode, read by the workers
	cur  []simMat
	nch  int
	pair bool
	dist int
}

// simMat is one matrix of a dispatch: its groups of 16 rows in 256 KiB
// chunks, numbered from first in the dispatch's sequence.
type simMat struct {
	w                   []byte
	nb, chunk, first, n int
	groups              int
}

func newStreamSim(workers int) (*streamSim, error) {
	type shape struct{ rows, cols int }
	var disp [][]shape
	for range 28 {
		disp = append(disp, []shape{{3072, 3072}, {1024, 3072}, {1024, 3072}}, []shape{{3072, 3072}},
			[]shape{{8192, 3072}, {8192, 3072}}, []shape{{3072, 8192}})
	}
	disp = append(disp, []shape{{128256, 3072}})
	total := 0
	for _, d := range disp {
		for _, m := range d {
			total += m.rows / Q4KR16Rows * (m.cols / 256) * Q4KR16Bytes
		}
	}
	r, err := hugemem.Alloc(total)
	if err != nil {
		return nil, err
	}
	mem := r.Bytes()
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1 // fault every page in
	}
	s := &streamSim{region: r, bytes: total, pool: pool.New(workers), x: make([]byte, 8192/256*Q4KR16ActBytes), dst: make([]float32, 4096)} // a call writes 16 floats a group: at most 9 groups
	off := 0
	for _, d := range disp {
		var ms []simMat
		c := 0
		for _, m := range d {
			nb := m.cols / 256
			gb := nb * Q4KR16Bytes
			g := m.rows / Q4KR16Rows
			ch := max(1, (256<<10)/gb)
			n := (g + ch - 1) / ch
			ms = append(ms, simMat{w: mem[off : off+g*gb], nb: nb, chunk: ch, first: c, n: n, groups: g})
			c += n
			off += g * gb
		}
		s.disp = append(s.disp, ms)
	}
	return s, nil
}

func (s *streamSim) close() {
	s.pool.Close()
	s.region.Free()
}

// sweep reads every dispatch once and returns the wall time.
func (s *streamSim) sweep(pair bool, dist int) time.Duration {
	s.pair, s.dist = pair, dist
	t0 := time.Now()
	for _, d := range s.disp {
		s.cur = d
		last := d[len(d)-1]
		s.nch = last.first + last.n
		s.pool.Run(s.work)
	}
	return time.Since(t0)
}

// chunk returns chunk c of the current dispatch: its matrix and groups.
func (s *streamSim) chunk(c int) (m *simMat, lo, hi int) {
	for i := range s.cur {
		if m = &s.cur[i]; c < m.first+m.n {
			lo = (c - m.first) * m.chunk
			return m, lo, min(lo+m.chunk, m.groups)
		}
	}
	panic("streamSim: chunk out of range")
}

func (s *streamSim) one(c int) {
	m, lo, hi := s.chunk(c)
	q4kr16DotMXPfN(&m.w[lo*m.nb*Q4KR16Bytes], &s.x[0], &s.dst[0], m.nb, hi-lo, s.dist)
}

func (s *streamSim) work(w, nw int) {
	lo, hi := pool.Split(s.nch, w, nw, 1)
	if !s.pair {
		for c := lo; c < hi; c++ {
			s.one(c)
		}
		return
	}
	mid := lo + (hi-lo+1)/2
	for a, b := lo, mid; a < mid || b < hi; a, b = a+1, b+1 {
		if a >= mid {
			s.one(b)
			continue
		}
		if b >= hi {
			s.one(a)
			continue
		}
		ma, la, ha := s.chunk(a)
		mb, lb, hb := s.chunk(b)
		if ma.nb != mb.nb || ha-la != hb-lb {
			s.one(a)
			s.one(b)
			continue
		}
		q4kr16Dot2N(&ma.w[la*ma.nb*Q4KR16Bytes], &s.x[0], &s.dst[0], ma.nb, ha-la,
			&mb.w[lb*mb.nb*Q4KR16Bytes], &s.dst[2048], s.dist)
	}
}
