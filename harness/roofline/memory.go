package roofline

import (
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/internal/hugemem"
)

// Pages selects how the memory probe's buffer is backed.
type Pages string

const (
	Pages4K   Pages = "4k"   // madvise(MADV_NOHUGEPAGE): ordinary pages even when THP is "always"
	PagesHuge Pages = "huge" // madvise(MADV_HUGEPAGE) on a 2 MiB-aligned anonymous mapping
)

const (
	hugePageSize = 2 << 20
	sweepBlock   = 512 // readSweep consumes 512 bytes per iteration
	sweepChunk   = 16 << 20
)

// MemoryRead measures read bandwidth (GB/s, 10⁹ bytes/s) at each thread
// count: the buffer is split into one contiguous part per thread and every
// repeat reads it all once.
func MemoryRead(opt Options, pages Pages) []Measurement {
	opt = opt.withDefaults()
	skip := func(reason string) []Measurement {
		out := make([]Measurement, len(opt.Threads))
		for i, t := range opt.Threads {
			out[i] = Measurement{Probe: ProbeMemRead, Pages: string(pages), Threads: t, Unit: "GB/s", Skipped: reason}
		}
		return out
	}
	if reason := needs("avx512f"); reason != "" {
		return skip(reason)
	}
	size := opt.MemBytes / hugePageSize * hugePageSize
	if size < hugePageSize {
		size = opt.MemBytes / sweepBlock * sweepBlock
	}
	if size < sweepBlock {
		return skip(fmt.Sprintf("buffer of %d bytes is smaller than one %d-byte sweep block", opt.MemBytes, sweepBlock))
	}
	buf, err := mapBuffer(int(size), pages)
	if err != nil {
		return skip(err.Error())
	}
	defer buf.unmap()
	fill(buf.data)
	huge := buf.hugePageBytes()
	note := ""
	if pages == PagesHuge {
		if mode := hugemem.SelectedTHPMode(); mode != "" {
			note = "THP " + mode
		}
		if huge >= 0 && huge < size/2 {
			note = joinNote(note, "huge pages mostly NOT obtained")
		}
	}

	out := make([]Measurement, 0, len(opt.Threads))
	for _, threads := range opt.Threads {
		m := Measurement{Probe: ProbeMemRead, Pages: string(pages), Threads: threads, Unit: "GB/s",
			BufferBytes: size, HugePageBytes: huge, Note: note}
		parts := split(buf.data, threads)
		rates := make([]float64, 0, opt.Repeats)
		sweep(parts) // warm-up: TLB and caches in steady state
		for r := 0; r < opt.Repeats; r++ {
			d := sweep(parts)
			rates = append(rates, float64(size)/d.Seconds())
		}
		summarize(&m, rates, 1e9)
		out = append(out, m)
	}
	return out
}

// sweep reads every part on its own thread and returns the wall time.
func sweep(parts [][]byte) time.Duration {
	sums := make([]uint64, len(parts))
	return parallel(len(parts), func(i int) {
		// Chunks of a few milliseconds keep the non-preemptible assembly
		// from delaying the garbage collector's stop-the-world pauses.
		for p := parts[i]; len(p) > 0; {
			n := min(len(p), sweepChunk)
			sums[i] += readSweep(&p[0], n)
			p = p[n:]
		}
	})
}

// split divides b into n contiguous parts of whole sweep blocks; the last
// takes the remainder.
func split(b []byte, n int) [][]byte {
	per := len(b) / n / sweepBlock * sweepBlock
	parts := make([][]byte, n)
	for i := range parts {
		lo, hi := i*per, (i+1)*per
		if i == n-1 {
			hi = len(b) / sweepBlock * sweepBlock
		}
		parts[i] = b[lo:hi]
	}
	return parts
}

// fill writes a non-zero pattern, faulting every page in before timing.
func fill(b []byte) {
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
	for i := range words {
		words[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
}

// needs returns "" when every feature is usable, else a skip reason.
func needs(features ...string) string {
	if !haveKernels {
		return "unavailable: built without the amd64 assembly (non-amd64 or noasm)"
	}
	if missing := cpufeat.Missing(features...); len(missing) > 0 {
		return "unavailable: CPU/OS lacks " + strings.Join(missing, ", ")
	}
	return ""
}
