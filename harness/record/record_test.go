package record

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

func sampleRecords() []Record {
	b := NewBatch(time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC))
	run := protocol.Record{Date: time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)}
	run.Machine.CPU.Model = "Test CPU"
	run.Machine.OS.GOOS, run.Machine.OS.GOARCH = "linux", "amd64"
	e2e := protocol.DefaultE2E()
	run.E2E = &e2e
	b.Add(Record{Kind: KindRun, Run: &Run{Command: "ledger test", Protocol: run}})
	for _, v := range []struct {
		name string
		ns   float64
	}{{"naive", 4000}, {"avx512", 1000}} {
		ns := []float64{v.ns, v.ns * 1.01, v.ns * 0.99, v.ns * 1.02}
		b.Add(Record{Kind: KindKernel, Kernel: &Kernel{Op: "matvec/q4_k", Variant: v.name, Family: v.name,
			Shape: "2048x2048", Label: "2048x2048 (1B attn_q)", FLOPs: 2 * 2048 * 2048, Bytes: 2048 * 8 * 144,
			Iters: 10, NsPerOp: ns, Summary: stats.Summarize(ns), GBps: 2048 * 8 * 144 / v.ns, GFLOPS: 2 * 2048 * 2048 / v.ns}})
	}
	b.Add(Record{Kind: KindGate, Gate: &gate.Result{Op: "matvec/q4_k", Variant: "broken", Shape: "7x768", Outcome: gate.Fail, Error: "NMSE 1 > 1e-06"}})
	for _, e := range []struct {
		engine string
		tg     []float64
	}{{"damascus", []float64{12, 12.5, 11.8}}, {"llama.cpp", []float64{10, 10.2, 9.9}}} {
		b.Add(Record{Kind: KindE2E, E2E: &E2E{Engine: e.engine, Test: "tg256", Unit: "tok/s", Samples: e.tg, Summary: stats.Summarize(e.tg)}})
		rss := []float64{800 << 20, 801 << 20}
		b.Add(Record{Kind: KindE2E, E2E: &E2E{Engine: e.engine, Test: "peak-rss", Unit: "B", Samples: rss, Summary: stats.Summarize(rss)}})
	}
	return b.Recs
}

func TestStoreRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results", "ledger.jsonl")
	recs := sampleRecords()
	if err := Append(path, recs[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, recs[3:]...); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("loaded %d records, wrote %d", len(got), len(recs))
	}
	if got[1].Kernel.NsPerOp[2] != recs[1].Kernel.NsPerOp[2] || got[0].Run.Command != "ledger test" || got[3].Gate.Outcome != gate.Fail {
		t.Errorf("records changed in the round trip: %+v", got[1].Kernel)
	}
	if got[2].ID == got[1].ID || !strings.HasPrefix(got[2].ID, got[2].RunID+"/") {
		t.Errorf("ids %q %q (run %q)", got[1].ID, got[2].ID, got[2].RunID)
	}
	if recs, err := Load(filepath.Join(t.TempDir(), "none.jsonl")); err != nil || recs != nil {
		t.Errorf("missing store: %v, %v", recs, err)
	}
	if _, err := Read(strings.NewReader("{\"id\":1}\n"), "bad.jsonl"); err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Errorf("malformed line: %v", err)
	}
}

// TestBenchFileReadsBack checks that benchfmt, which benchstat is built
// on, parses what WriteBench writes, with the custom units.
func TestBenchFileReadsBack(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteBench(&buf, sampleRecords()); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(&buf, "bench.txt")
	names := map[string]int{}
	units := map[string]bool{}
	better := map[string]string{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			names[rec.Name.String()]++
			for _, v := range rec.Values {
				units[v.Unit] = true
			}
			if rec.GetConfig("cpu") != "Test CPU" {
				t.Errorf("cpu config %q", rec.GetConfig("cpu"))
			}
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for k, m := range r.Units() {
		better[k.Unit] = m.Value
	}
	if names["MatVec/type=Q4_K/variant=avx512/shape=2048x2048"] != 4 || names["E2E/engine=llama.cpp/test=tg256"] != 3 {
		t.Errorf("names %v", names)
	}
	for _, u := range []string{"sec/op", "GB/s", "GFLOP/s", "tok/s", "B"} {
		if !units[u] {
			t.Errorf("unit %s missing (have %v)", u, units)
		}
	}
	if better["tok/s"] != "higher" || better["GB/s"] != "higher" {
		t.Errorf("unit metadata %v", better)
	}
}

func TestTablesAndBaseline(t *testing.T) {
	recs := sampleRecords()
	k := KernelTable(recs).Render()
	if !strings.Contains(k, "avx512") || !strings.Contains(k, "4.00") { // 4× naive
		t.Errorf("kernel table:\n%s", k)
	}
	e := BaselineTable(recs).RenderMarkdown()
	if !strings.Contains(e, "| decode tok/s") || !strings.Contains(e, "1.20×") || !strings.Contains(e, "800 MiB") ||
		!strings.Contains(e, "per round D/L: median 1.20×, 1.19–1.23 over 3 rounds") || strings.Count(e, "per round") != 1 {
		t.Errorf("baseline table:\n%s", e)
	}
	var doc bytes.Buffer
	if err := WriteBaseline(&doc, recs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## End to end", "## Kernel ledger", "Test CPU", "pp1024 and tg256", "Failed the gate", "broken"} {
		if !strings.Contains(doc.String(), want) {
			t.Errorf("baseline.md lacks %q:\n%s", want, doc.String())
		}
	}
}

func TestKernelChartSVG(t *testing.T) {
	c, ok := KernelChart(sampleRecords(), "matvec/q4_k")
	if !ok || len(c.Series) != 2 || len(c.Groups) != 1 {
		t.Fatalf("chart %+v", c)
	}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	rects := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if rects < 1+2+2 { // background, two bars, two legend swatches
		t.Errorf("%d rects", rects)
	}
	if _, ok := KernelChart(sampleRecords(), "rmsnorm"); ok {
		t.Error("chart of an op without records")
	}
}

// TestBenchstatReadsFile runs the real benchstat on a written file when it
// is installed (go install golang.org/x/perf/cmd/benchstat@latest).
func TestBenchstatReadsFile(t *testing.T) {
	bin, err := exec.LookPath("benchstat")
	if err != nil {
		t.Skip("benchstat not on PATH")
	}
	path := filepath.Join(t.TempDir(), "bench.txt")
	var buf bytes.Buffer
	if err := WriteBench(&buf, sampleRecords()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-col", "/variant", path).CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	for _, want := range []string{"avx512", "naive", "GB/s", "sec/op"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("benchstat output lacks %q:\n%s", want, out)
		}
	}
}

// TestBaselineRepsPerRound: with several repetitions per round the decode
// row's paired ratios say rounds × reps, not as many rounds as samples, and
// the conditions state both; sustained decode (windows, no reps) is as before.
func TestBaselineRepsPerRound(t *testing.T) {
	b := NewBatch(time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC))
	run := protocol.Record{Date: time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)}
	e2e := protocol.E2E{GenTokens: 64, Runs: 2, RepsPerRound: 3, WarmupRuns: 1, Threads: 2, Depth: 16384, Interleaved: true}
	run.E2E = &e2e
	b.Add(Record{Kind: KindRun, Run: &Run{Command: "ledger e2e --depth 16384 --runs 2 --reps 3", Protocol: run}})
	for _, e := range []struct {
		engine  string
		tg, sus []float64
	}{
		{"damascus", []float64{20, 21, 22, 18, 19, 20}, []float64{30, 29}},
		{"llama.cpp", []float64{10, 10, 10, 10, 10, 10}, []float64{20, 20}},
	} {
		b.Add(Record{Kind: KindE2E, E2E: &E2E{Engine: e.engine, Test: "tg64@d16384", Unit: "tok/s", Samples: e.tg, Summary: stats.Summarize(e.tg)}})
		b.Add(Record{Kind: KindE2E, E2E: &E2E{Engine: e.engine, Test: "sustained", Unit: "tok/s", Samples: e.sus, Summary: stats.Summarize(e.sus)}})
	}
	table := BaselineTable(b.Recs).RenderMarkdown()
	for _, want := range []string{
		"per sample D/L (paired by round and repetition): median 2.00×, 1.80–2.20 over 2 rounds × 3 reps",
		"per round D/L: median 1.48×, 1.45–1.50 over 2 rounds", // sustained: its two windows
	} {
		if !strings.Contains(table, want) {
			t.Errorf("baseline table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "over 6 rounds") {
		t.Errorf("baseline table counts samples as rounds:\n%s", table)
	}
	var doc bytes.Buffer
	if err := WriteBaseline(&doc, b.Recs); err != nil {
		t.Fatal(err)
	}
	if want := "2 runs × 3 reps (one process per engine and run, 6 samples) after 1 warmup"; !strings.Contains(doc.String(), want) {
		t.Errorf("baseline.md lacks %q:\n%s", want, doc.String())
	}
}
