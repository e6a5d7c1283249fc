package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol/stats"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/naive"
	"golang.org/x/perf/benchfmt"
)

// register adds v to the default registry for the duration of the test.
func registerForTest(t *testing.T, v ledger.Variant) {
	t.Helper()
	if err := ledger.Default.Add(v); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ledger.Default.Remove(v.Op, v.Name) })
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// TestGateNamesBrokenVariant registers a deliberately broken matvec (its
// sums lose the block minimums) and checks that `ledger gate` exits non-zero
// naming the op, the variant, a shape and the error.
func TestGateNamesBrokenVariant(t *testing.T) {
	good := naive.MatVec(quant.Q4_K)
	registerForTest(t, ledger.Variant{Op: "matvec/q4_k", Name: "broken-sign", Family: ledger.FamilyGoUnrolled,
		Impl: ledger.MatVec(func(dst []float32, w, xq []byte, k int) {
			good(dst, w, xq, k)
			for i := range dst {
				dst[i] = -dst[i]
			}
		})})
	code, stdout, stderr := runCLI("gate", "--op", "matvec/q4_k", "--variant", "naive,broken-sign", "--shapes", "tails")
	if code == 0 {
		t.Fatalf("ledger gate exited 0 with a broken variant registered\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	for _, want := range []string{"op matvec/q4_k variant broken-sign shape 1x256", "NMSE", "cosine"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "variant naive") {
		t.Errorf("naive reported as failing:\n%s", stderr)
	}
	if code, _, stderr := runCLI("gate", "--op", "matvec/q4_k", "--variant", "naive", "--shapes", "tails"); code != 0 {
		t.Errorf("naive alone: exit %d\n%s", code, stderr)
	}
	if code, _, _ := runCLI("gate", "--shapes", "bogus"); code != 2 {
		t.Errorf("bad --shapes: exit %d, want 2", code)
	}
}

// A variant name that is no variant of the selected ops is refused by
// gate and run before anything runs, rather than the others running alone.
func TestUnknownVariantRefused(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store.jsonl")
	for _, args := range [][]string{
		{"gate", "--op", "matvec/q4_k", "--variant", "naive,naive-typo", "--shapes", "tails"},
		{"run", "--op", "matvec/q4_k", "--variant", "naive,naive-typo", "--shapes", "tails", "--runs", "1", "--store", store},
		{"run", "--op", "rmsnorm", "--variant", "avx512-vnni-pf8k", "--shapes", "tails", "--runs", "1", "--store", store}, // a matvec's, not rmsnorm's
	} {
		code, stdout, stderr := runCLI(args...)
		if code == 0 || !strings.Contains(stderr, "--variant") {
			t.Errorf("%v: exit %d, want non-zero naming --variant\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
	}
	if _, err := os.Stat(store); err == nil {
		t.Errorf("a refused run wrote %s", store)
	}
}

func TestList(t *testing.T) {
	code, out, errOut := runCLI("list")
	if code != 0 || !strings.Contains(out, "matvec/q4_k") || !strings.Contains(out, "naive") {
		t.Errorf("list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI("list", "--ops", "--markdown")
	if code != 0 || !strings.Contains(out, "| rmsnorm") || !strings.Contains(out, "128256x3072 (3B output)") {
		t.Errorf("list --ops: exit %d\n%s", code, out)
	}
}

// kernelRunRecords is kernelRun's store and the records it holds.
func kernelRunRecords(t *testing.T) (string, []record.Record) {
	t.Helper()
	store := kernelRun(t)
	recs, err := record.Load(store)
	if err != nil {
		t.Fatal(err)
	}
	return store, recs
}

// kernelRun writes a store holding one kernel run in which naive, speedy
// (4× faster) and slowpoke (5% slower) were timed at two shapes, all gated.
func kernelRun(t *testing.T) string {
	t.Helper()
	b := record.NewBatch(time.Now())
	b.Add(record.Record{Kind: record.KindRun, Run: &record.Run{Command: "test"}})
	for _, v := range []struct {
		name  string
		scale float64
	}{{"naive", 1}, {"speedy", 0.25}, {"slowpoke", 1.05}} {
		for _, shape := range []string{"2048x2048", "512x2048"} {
			b.Add(record.Record{Kind: record.KindGate, Gate: &gate.Result{Op: "rmsnorm", Variant: v.name, Shape: shape, Outcome: gate.Pass}})
			ns := make([]float64, 10)
			for i := range ns {
				ns[i] = v.scale * (1000 + float64(i*7%10))
			}
			b.Add(record.Record{Kind: record.KindKernel, Kernel: &record.Kernel{Op: "rmsnorm", Variant: v.name, Shape: shape,
				Label: shape, NsPerOp: ns, Iters: 1, Summary: stats.Summarize(ns), GBps: 1 / v.scale, FLOPs: 1e3, Bytes: 1e3}})
		}
	}
	store := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := record.Append(store, b.Recs...); err != nil {
		t.Fatal(err)
	}
	return store
}

func writePrefs(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "preferences.json")
	data, err := promoted.Preferences{Ops: map[string][]promoted.Choice{}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPromoteRefusesLoser: a variant slower than the incumbent is refused
// (non-zero exit when named) and the preference file is left as it was; a
// clearly faster one is promoted with its evidence.
func TestPromoteRefusesLoser(t *testing.T) {
	for _, name := range []string{"speedy", "slowpoke"} {
		registerForTest(t, ledger.Variant{Op: "rmsnorm", Name: name, Family: ledger.FamilyGoUnrolled, Impl: ledger.RMSNorm(naive.RMSNorm)})
	}
	store, prefs := kernelRun(t), writePrefs(t)
	before, _ := os.ReadFile(prefs)

	code, out, errOut := runCLI("promote", "--store", store, "--prefs", prefs, "--variant", "slowpoke")
	if code == 0 {
		t.Fatalf("slowpoke promoted:\n%s", out)
	}
	if !strings.Contains(out, "slowpoke") || !strings.Contains(out, "refused") || !strings.Contains(errOut, "did not beat the incumbent") {
		t.Errorf("refusal not explained:\n%s\n%s", out, errOut)
	}
	if after, _ := os.ReadFile(prefs); !bytes.Equal(before, after) {
		t.Errorf("preferences changed by a refusal:\n%s", after)
	}

	if code, out, errOut := runCLI("promote", "--store", store, "--prefs", prefs); code != 0 {
		t.Fatalf("promote: exit %d\n%s\n%s", code, out, errOut)
	}
	data, _ := os.ReadFile(prefs)
	p, err := promoted.ParsePreferences(data)
	if err != nil {
		t.Fatal(err)
	}
	list := p.Ops["rmsnorm"]
	if len(list) != 1 || list[0].Variant != "speedy" || list[0].Over != "naive" || list[0].Evidence == "" {
		t.Fatalf("rmsnorm preferences %+v, want [speedy over naive with evidence]", list)
	}
	recs, _ := record.Load(store)
	found := false
	for _, r := range recs {
		if r.ID == list[0].Evidence {
			found = r.Promotion != nil && r.Promotion.Promote && len(r.Promotion.Evidence) == 4
		}
	}
	if !found {
		t.Errorf("evidence %s is not a promotion record citing the kernel records", list[0].Evidence)
	}
}

func TestReportWritesFiles(t *testing.T) {
	store := kernelRun(t)
	dir := t.TempDir()
	code, out, errOut := runCLI("report", "--store", store, "--out", dir)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errOut)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "baseline.md"))
	if err != nil || !strings.Contains(string(doc), "speedy") || !strings.Contains(string(doc), "No end-to-end run recorded yet") {
		t.Errorf("baseline.md (%v):\n%s", err, doc)
	}
	if _, err := os.Stat(filepath.Join(dir, "charts", "rmsnorm.svg")); err != nil {
		t.Error(err)
	}
	benches, _ := filepath.Glob(filepath.Join(dir, "bench", "*.txt"))
	if len(benches) != 1 {
		t.Fatalf("bench files %v", benches)
	}
	f, _ := os.Open(benches[0])
	defer f.Close()
	r := benchfmt.NewReader(f, benches[0])
	n := 0
	for r.Scan() {
		if _, ok := r.Result().(*benchfmt.Result); ok {
			n++
		}
	}
	if r.Err() != nil || n != 60 {
		t.Errorf("read back %d results (%v), want 60", n, r.Err())
	}
	if code, _, _ := runCLI("report", "--store", filepath.Join(dir, "none.jsonl")); code != 1 {
		t.Errorf("empty store: exit %d, want 1", code)
	}
}

// runFast runs `ledger run` with args, the shortest timing and no roofline
// probe, appending to store; it stops the test unless the run succeeds and
// returns its stdout.
func runFast(t *testing.T, store string, args ...string) (stdout string) {
	t.Helper()
	args = append(append([]string{"run"}, args...), "--min-sample", "100us", "--warmup", "100us", "--no-roofline", "--store", store)
	code, out, errOut := runCLI(args...)
	if code != 0 {
		t.Fatalf("%q: exit %d\n%s\n%s", args, code, out, errOut)
	}
	return out
}

// runAndLoad is runFast into a fresh store; it returns the run's stdout and
// the records it stored.
func runAndLoad(t *testing.T, args ...string) (stdout string, recs []record.Record) {
	t.Helper()
	store := filepath.Join(t.TempDir(), "ledger.jsonl")
	out := runFast(t, store, args...)
	recs, err := record.Load(store)
	if err != nil {
		t.Fatal(err)
	}
	return out, recs
}

func TestRunTimesAndRecords(t *testing.T) {
	out, recs := runAndLoad(t, "--op", "rmsnorm", "--variant", "naive", "--shapes", "tails", "--runs", "2")
	kinds := map[record.Kind]int{}
	for _, r := range recs {
		kinds[r.Kind]++
	}
	if kinds[record.KindRun] != 1 || kinds[record.KindKernel] != kinds[record.KindGate] || kinds[record.KindKernel] < 5 {
		t.Errorf("recorded %v", kinds)
	}
	if !strings.Contains(out, "rmsnorm") || !strings.Contains(out, "n257") {
		t.Errorf("table:\n%s", out)
	}
}

// ledger run --threads N times a matvec with its rows split over N workers
// and records the thread count; it refuses 0 and ops that are not matvecs.
func TestRunThreads(t *testing.T) {
	_, recs := runAndLoad(t, "--op", "matvec/q8_0", "--variant", "naive", "--shapes", "tails", "--runs", "2", "--threads", "2")
	threads := -1
	for _, r := range recs {
		if r.Kind == record.KindRun {
			if k := r.Run.Protocol.Kernel; k != nil {
				threads = k.Threads
			}
		}
	}
	if threads != 2 {
		t.Errorf("recorded threads %d, want 2", threads)
	}
	if code, _, errOut := runCLI("run", "--op", "rmsnorm", "--threads", "2", "--no-roofline", "--store", ""); code != 2 || !strings.Contains(errOut, "--threads") {
		t.Errorf("--threads 2 over rmsnorm: exit %d, %q; want 2 and a message naming --threads", code, errOut)
	}
	if code, _, errOut := runCLI("run", "--op", "matvec/q8_0", "--threads", "0", "--no-roofline", "--store", ""); code != 2 || !strings.Contains(errOut, "--threads") {
		t.Errorf("--threads 0: exit %d, %q; want 2 and a message naming --threads", code, errOut)
	}
}

func TestProtocolCommand(t *testing.T) {
	code, out, errOut := runCLI("protocol")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		E2E struct {
			PromptTokens int `json:"prompt_tokens"`
			GenTokens    int `json:"gen_tokens"`
		} `json:"e2e"`
		Thresholds map[string]gate.Thresholds `json:"gate_thresholds"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.E2E.PromptTokens != 1024 || doc.E2E.GenTokens != 256 || len(doc.Thresholds) != len(ledger.Catalogue()) {
		t.Errorf("protocol document: %+v", doc)
	}
}

// TestQuickFlags: quick combines the kernel and e2e flag sets; a clash
// would panic at parse time.
func TestQuickFlags(t *testing.T) {
	if code, _, errOut := runCLI("quick", "-h"); code != 2 || !strings.Contains(errOut, "-no-e2e") || !strings.Contains(errOut, "-preset") {
		t.Errorf("quick -h: exit %d\n%s", code, errOut)
	}
	if code, _, _ := runCLI("e2e", "-h"); code != 2 {
		t.Errorf("e2e -h: exit %d", code)
	}
}
