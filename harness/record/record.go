// Package record stores what the workbench measured — one JSON record per
// line of JSONL, by default in results/ledger/ in the repository, one file
// per UTC month (see store.go) — and renders it: Markdown tables (results/baseline.md), benchstat-format
// files and SVG charts. The data lives in results/; this package lives here so
// that results/ holds data only.
package record

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/damascus-llm/damascus/harness/kernelrun"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// DefaultStore is the store of the repository, relative to its root: a
// folder of month files (results/ledger/2026-11.jsonl, ...), so that no one
// data file grows without bound.
const DefaultStore = "results/ledger"

// Kind of record.
type Kind string

const (
	KindRun       Kind = "run"       // one command invocation: its protocol record
	KindGate      Kind = "gate"      // a variant's gate verdict at one shape
	KindKernel    Kind = "kernel"    // a variant's timing at one shape
	KindE2E       Kind = "e2e"       // an engine's end-to-end test
	KindPromotion Kind = "promotion" // a promotion decision
)

// A Record is one line of the store. Exactly one of the payload fields is
// set, matching Kind. Records of one invocation share RunID; the KindRun
// record carries the conditions they were measured under.
type Record struct {
	ID        string       `json:"id"`
	RunID     string       `json:"run_id"`
	Kind      Kind         `json:"kind"`
	Time      time.Time    `json:"time"`
	Run       *Run         `json:"run,omitempty"`
	Gate      *gate.Result `json:"gate,omitempty"`
	Kernel    *Kernel      `json:"kernel,omitempty"`
	E2E       *E2E         `json:"e2e,omitempty"`
	Promotion *Promotion   `json:"promotion,omitempty"`
}

// Run describes one invocation.
type Run struct {
	Command  string           `json:"command"`
	Note     string           `json:"note,omitempty"` // the operator's remark, e.g. on machine load
	Protocol protocol.Record  `json:"protocol"`
	Roofline *roofline.Report `json:"roofline,omitempty"`
}

// Kernel is one variant timed at one shape.
type Kernel struct {
	Op      string        `json:"op"`
	Variant string        `json:"variant"`
	Family  string        `json:"family"`
	Shape   string        `json:"shape"`
	Label   string        `json:"label"` // shape with its origin, e.g. "2048x8192 (1B ffn_down)"
	FLOPs   float64       `json:"flops"`
	Bytes   float64       `json:"bytes"`
	Iters   int           `json:"iters"`
	NsPerOp []float64     `json:"ns_per_op"` // raw samples, in run order
	Order   []int         `json:"order"`     // position within each interleaved run
	Summary stats.Summary `json:"summary"`   // of NsPerOp
	GFLOPS  float64       `json:"gflops"`    // at the median
	GBps    float64       `json:"gbps"`      // at the median
	// Fractions of this machine's single-thread roofline (memory read
	// bandwidth, and peak compute of the relevant unit); 0 when not probed.
	BandwidthFraction float64 `json:"bandwidth_fraction,omitempty"`
	ComputeFraction   float64 `json:"compute_fraction,omitempty"`
	ComputePeak       string  `json:"compute_peak,omitempty"` // which probe the compute fraction refers to
}

// KernelOf is the ledger record of a kernel run's timing.
func KernelOf(t kernelrun.Timing) *Kernel {
	k := Kernel(t)
	return &k
}

// E2E is one engine's samples of one end-to-end test.
type E2E struct {
	Engine  string        `json:"engine"` // "damascus" or "llama.cpp"
	Test    string        `json:"test"`   // "pp1024", "tg256", "cold-start", "peak-rss", "sustained"
	Unit    string        `json:"unit"`   // "tok/s", "s", "B"
	Samples []float64     `json:"samples"`
	Summary stats.Summary `json:"summary"`
	Notes   string        `json:"notes,omitempty"`
	// Sustained decode: throughput of the first and last window.
	FirstWindow float64 `json:"first_window,omitempty"`
	LastWindow  float64 `json:"last_window,omitempty"`
}

// Promotion records one decision of `ledger promote`.
type Promotion struct {
	Op         string          `json:"op"`
	Challenger string          `json:"challenger"`
	Incumbent  string          `json:"incumbent"`
	Shapes     []ShapeDecision `json:"shapes"`
	Promote    bool            `json:"promote"`
	Reason     string          `json:"reason"`
	Rule       protocol.Rule   `json:"rule"`
	Evidence   []string        `json:"evidence"` // kernel record ids compared
}

// ShapeDecision is the rule applied at one shape.
type ShapeDecision struct {
	Shape    string            `json:"shape"`
	Decision protocol.Decision `json:"decision"`
}

// NewRunID returns a fresh invocation id: UTC time plus random hex.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// A Batch numbers the records of one invocation.
type Batch struct {
	RunID string
	n     int
	Recs  []Record
}

// NewBatch starts the records of an invocation.
func NewBatch(now time.Time) *Batch { return &Batch{RunID: NewRunID(now)} }

// Add stamps r with an id, the run id and the time, keeps it and returns it.
func (b *Batch) Add(r Record) Record {
	b.n++
	r.RunID = b.RunID
	r.ID = fmt.Sprintf("%s/%d", b.RunID, b.n)
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	b.Recs = append(b.Recs, r)
	return r
}

// LatestRun returns the records of the most recent invocation that produced
// records of kind k.
func LatestRun(recs []Record, k Kind) []Record {
	runID := ""
	for _, r := range recs {
		if r.Kind == k {
			runID = r.RunID
		}
	}
	if runID == "" {
		return nil
	}
	return OfRun(recs, runID)
}

// OfRun returns the records with the given run id.
func OfRun(recs []Record, runID string) []Record {
	var out []Record
	for _, r := range recs {
		if r.RunID == runID {
			out = append(out, r)
		}
	}
	return out
}
