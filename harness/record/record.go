// Package record stores what the workbench measured — one JSON record per
// line in a JSONL file, by default results/ledger.jsonl in the repository —
// and renders it: Markdown tables (results/baseline.md), benchstat-format
// files and SVG charts. The data lives in results/; this package lives here so
// that results/ holds data only.
package record

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/damascus-llm/damascus/harness/kernelrun"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// DefaultStore is the results file of the repository, relative to its root.
const DefaultStore = "results/ledger.jsonl"

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

// Append writes records to the JSONL file at path, creating it (and its
// directory) if needed. The records go in one write, then the file is
// synced: a crash leaves them all, none, or a torn last line. A torn line
// left by an earlier crash is closed with a newline first, so the new
// records start on a line of their own (readers skip the fragment; see
// LoadSkippingDamaged).
func Append(path string, recs ...Record) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("results: record %s: %w", r.ID, err)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	data := buf.Bytes()
	if err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err = f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// Load reads every record of the JSONL file at path. A missing file is an
// empty store; a damaged line is an error (see LoadSkippingDamaged).
func Load(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Read decodes JSONL records; name is used in errors. A damaged line is an
// error naming name:line.
func Read(r io.Reader, name string) ([]Record, error) {
	return read(r, name, func(d Damaged) error { return d })
}

// A Damaged line of a store: a record torn by a run killed mid-write, or
// edited by hand.
type Damaged struct {
	File string
	Line int
	Err  error
}

func (d Damaged) Error() string { return fmt.Sprintf("results: %s:%d: %v", d.File, d.Line, d.Err) }

// LoadSkippingDamaged reads the records of the store at path that a command
// needs to exist: a missing file is an error (wrapping fs.ErrNotExist), and
// each damaged line is skipped and reported to warn, so that one torn
// record does not make the whole store unreadable.
func LoadSkippingDamaged(path string, warn io.Writer) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	return read(f, path, func(d Damaged) error {
		fmt.Fprintf(warn, "warning: %s:%d: damaged record skipped: %v\n", d.File, d.Line, d.Err)
		return nil
	})
}

// maxLine bounds one record; a longer line is damaged.
const maxLine = 64 << 20

// read decodes JSONL records, handing each damaged line to damaged; an
// error from it ends the read.
func read(r io.Reader, name string, damaged func(Damaged) error) ([]Record, error) {
	var recs []Record
	br := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		b, tooLong, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("results: %s: %w", name, err)
		}
		if len(b) > 0 || tooLong {
			var rec Record
			var bad error
			if tooLong {
				bad = fmt.Errorf("line longer than %d bytes", maxLine)
			} else if jerr := json.Unmarshal(b, &rec); jerr != nil {
				bad = jerr
				if errors.Is(err, io.EOF) {
					bad = fmt.Errorf("incomplete last line (a run killed while writing?): %w", jerr)
				}
			}
			if bad != nil {
				if derr := damaged(Damaged{File: name, Line: line, Err: bad}); derr != nil {
					return nil, derr
				}
			} else {
				recs = append(recs, rec)
			}
		}
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
	}
}

// readLine returns the next line without its newline (io.EOF with the last
// one, which may lack it). A line over maxLine is consumed and reported
// tooLong.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > maxLine {
				line, tooLong = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		return line, tooLong, err
	}
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
