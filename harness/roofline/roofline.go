package roofline

import (
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Probe names.
const (
	ProbeMemRead  = "mem-read"
	ProbeFP32FMA  = "fp32-fma"
	ProbeInt8VNNI = "int8-vnni"
	ProbeAMXInt8  = "amx-int8"
	ProbeAMXBF16  = "amx-bf16"
)

// Measurement is one probe at one thread count (and page kind, for memory).
type Measurement struct {
	Probe   string `json:"probe"`
	Pages   string `json:"pages,omitempty"` // "4k" or "huge" for memory probes
	Threads int    `json:"threads"`
	// Best and Median over the repeats, in Unit; PerSecond is Best in bytes/s
	// or operations/s (an FMA or a multiply-add counts as 2 operations).
	Best      float64 `json:"best,omitempty"`
	Median    float64 `json:"median,omitempty"`
	Unit      string  `json:"unit"`
	PerSecond float64 `json:"per_second,omitempty"`
	Repeats   int     `json:"repeats,omitempty"`
	// Memory probes: buffer size and how much of it huge pages backed
	// (AnonHugePages of its mapping in /proc/self/smaps; -1 if unreadable).
	BufferBytes   int64  `json:"buffer_bytes,omitempty"`
	HugePageBytes int64  `json:"huge_page_bytes,omitempty"`
	Note          string `json:"note,omitempty"`
	// Memory probes: the sweep kind measured (the fastest: "plain",
	// "two-streams" or "prefetch-4k") and every kind's best GB/s.
	Sweep  string             `json:"sweep,omitempty"`
	Sweeps map[string]float64 `json:"sweeps,omitempty"`
	// Skipped says why the probe did not run; all numbers are then zero.
	Skipped string `json:"skipped,omitempty"`
}

// Options size the probes. Zero fields take the defaults.
type Options struct {
	MemBytes    int64         // memory probe buffer; default 1 GiB
	Threads     []int         // thread counts; default 1, 2, 4, … up to GOMAXPROCS, and GOMAXPROCS
	Repeats     int           // timed repeats per point; default 5
	ComputeTime time.Duration // target duration of one compute repeat; default 200 ms
}

const (
	defaultMemBytes    = 1 << 30
	defaultRepeats     = 5
	defaultComputeTime = 200 * time.Millisecond
)

func (o Options) withDefaults() Options {
	if o.MemBytes <= 0 {
		o.MemBytes = defaultMemBytes
	}
	if len(o.Threads) == 0 {
		o.Threads = DefaultThreads(runtime.GOMAXPROCS(0))
	}
	if o.Repeats <= 0 {
		o.Repeats = defaultRepeats
	}
	if o.ComputeTime <= 0 {
		o.ComputeTime = defaultComputeTime
	}
	return o
}

// DefaultThreads returns 1, 2, 4, … below max, then max.
func DefaultThreads(max int) []int {
	var ts []int
	for t := 1; t < max; t *= 2 {
		ts = append(ts, t)
	}
	return append(ts, max)
}

// Report is a full probe run.
type Report struct {
	Date         time.Time     `json:"date"`
	GOMAXPROCS   int           `json:"gomaxprocs"`
	MemBytes     int64         `json:"mem_bytes"`
	Repeats      int           `json:"repeats"`
	Measurements []Measurement `json:"measurements"`
	// Rounds, for an end-to-end run with per-round probes
	// (protocol.E2E.RoundProbe), is the huge-page memory probe read before
	// the first round and after each round: round r lies between Rounds[r]
	// and Rounds[r+1].
	Rounds []Measurement `json:"rounds,omitempty"`
}

// Run runs every probe with the given options.
func Run(opt Options) Report {
	opt = opt.withDefaults()
	r := Report{Date: time.Now().UTC(), GOMAXPROCS: runtime.GOMAXPROCS(0), MemBytes: opt.MemBytes, Repeats: opt.Repeats}
	r.Measurements = append(r.Measurements, MemoryRead(opt, Pages4K)...)
	r.Measurements = append(r.Measurements, MemoryRead(opt, PagesHuge)...)
	r.Measurements = append(r.Measurements, FP32FMA(opt)...)
	r.Measurements = append(r.Measurements, Int8VNNI(opt)...)
	r.Measurements = append(r.Measurements, AMXInt8(opt)...)
	r.Measurements = append(r.Measurements, AMXBF16(opt)...)
	return r
}

// Peak returns the best measured rate (per second) of a probe over all thread
// counts and page kinds, and false if it never ran.
func (r Report) Peak(probe string) (float64, bool) {
	best, ok := 0.0, false
	for _, m := range r.Measurements {
		if m.Probe == probe && m.Skipped == "" && m.PerSecond > best {
			best, ok = m.PerSecond, true
		}
	}
	return best, ok
}

// WriteText renders the report as an aligned table.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "probe\tpages\tthreads\tbest\tmedian\tunit\tnotes\n")
	for _, m := range r.Measurements {
		if m.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\t%d\t-\t-\t%s\tskipped: %s\n", m.Probe, m.Pages, m.Threads, m.Unit, m.Skipped)
			continue
		}
		note := m.Note
		if m.BufferBytes > 0 {
			note = joinNote(fmt.Sprintf("buffer %s, huge pages %s", mib(m.BufferBytes), mib(m.HugePageBytes)), note)
		}
		if m.Sweep != "" {
			kinds := slices.Sorted(maps.Keys(m.Sweeps))
			var each []string
			for _, k := range kinds {
				each = append(each, fmt.Sprintf("%s %.4g", k, m.Sweeps[k]))
			}
			note = joinNote(note, fmt.Sprintf("fastest sweep %s (%s)", m.Sweep, strings.Join(each, ", ")))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.4g\t%.4g\t%s\t%s\n", m.Probe, m.Pages, m.Threads, m.Best, m.Median, m.Unit, note)
	}
	return tw.Flush()
}

func mib(b int64) string {
	if b < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

func joinNote(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// parallel runs work(i) for i in [0, n) on n goroutines, each locked to its
// OS thread, released together once all are ready, and returns the wall time
// from release to the last finish.
func parallel(n int, work func(i int)) time.Duration {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer done.Done()
			ready.Done()
			<-start
			work(i)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return time.Since(t0)
}

// summarize turns per-repeat rates (per second) into best and median in unit.
func summarize(m *Measurement, rates []float64, scale float64) {
	slices.Sort(rates)
	m.Repeats = len(rates)
	m.PerSecond = rates[len(rates)-1]
	m.Best = m.PerSecond / scale
	mid := len(rates) / 2
	med := rates[mid]
	if len(rates)%2 == 0 {
		med = (rates[mid-1] + rates[mid]) / 2
	}
	m.Median = med / scale
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
