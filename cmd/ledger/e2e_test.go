package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// TestMain lets the test binary stand in for the ledger binary when e2e
// spawns `<self> damascus-bench ...` or `<self> llama-bench ...`, and for
// an external llama-bench binary when run under that name.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "llama-bench" { // the fake of e2e_gpu_test.go
		os.Exit(fakeLlamaBench(os.Args[1:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 {
		if _, ok := commands.Lookup(os.Args[1]); ok {
			os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// requireE2E skips in -short mode and where the pinned llama.cpp or the
// tiny preset's tokenizer and template are missing; it returns a temporary
// directory for the run.
func requireE2E(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("spawns both engines several times")
	}
	if _, err := llamacpp.LibDir(); err != nil {
		t.Skipf("pinned llama.cpp not installed (make baseline): %v", err)
	}
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	return t.TempDir()
}

// readJSON decodes the JSON file at path into v, stopping the test if it
// cannot be read or decoded.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// TestE2ETiny runs the whole end-to-end comparison on the tiny synthetic
// preset: both engines spawned, interleaved, cold starts, records and JSON.
func TestE2ETiny(t *testing.T) {
	dir := requireE2E(t)
	store := filepath.Join(dir, "results", "ledger.jsonl")
	jsonOut := filepath.Join(dir, "e2e.json")
	code, out, errOut := runCLI("e2e", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--pp", "16", "--tg", "4",
		"--runs", "2", "--threads", "1", "--cold-runs", "1", "--sustained", "0", "--store", store, "--json", jsonOut)
	if code != 0 {
		t.Fatalf("e2e: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"decode tok/s", "prefill tok/s", "cold start", "peak RSS"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var js struct {
		Engines map[string]map[string]struct {
			Samples []float64 `json:"samples"`
			Median  float64   `json:"median"`
		} `json:"engines"`
		Ratios       map[string]float64   `json:"ratios"`
		PairedRatios map[string][]float64 `json:"paired_ratios"`
	}
	readJSON(t, jsonOut, &js)
	for _, eng := range []string{"damascus", "llama.cpp"} {
		for _, test := range []string{"pp16", "tg4"} {
			if s := js.Engines[eng][test]; len(s.Samples) != 2 || s.Median <= 0 {
				t.Errorf("%s %s: %+v", eng, test, s)
			}
		}
	}
	for _, eng := range []string{"damascus", "llama.cpp"} {
		// VmHWM of the bench process itself: megabytes, not the test
		// binary's own size inherited through fork.
		if s := js.Engines[eng]["peak-rss"]; len(s.Samples) != 2 || s.Median < 1<<20 {
			t.Errorf("%s peak RSS %+v", eng, s)
		}
	}
	if js.Ratios["tg4"] <= 0 || js.Ratios["pp16"] <= 0 {
		t.Errorf("ratios %v", js.Ratios)
	}
	if r := js.PairedRatios["tg4"]; len(r) != 2 || r[0] <= 0 || r[0] > r[1] {
		t.Errorf("paired ratios %v", js.PairedRatios)
	}
	recs, err := record.Load(store)
	if err != nil {
		t.Fatal(err)
	}
	if run := recs[0].Run; run == nil || run.Protocol.Model == nil || len(run.Protocol.Model.SHA256) != 64 ||
		run.Protocol.LlamaCpp == nil || run.Protocol.LlamaCpp.CPUVariant == "" || run.Protocol.E2E == nil {
		t.Errorf("protocol record incomplete: %+v", recs[0].Run)
	}
	// The record says where Damascus kept its weights: huge pages by default.
	if run := recs[0].Run; run != nil && (len(run.Protocol.Engines) == 0 || run.Protocol.Engines[0].Name != "damascus" ||
		!strings.Contains(run.Protocol.Engines[0].Notes, "weights") || run.Protocol.Engines[0].WeightsOnHugePages == "") {
		t.Errorf("damascus placement not recorded: %+v", run.Protocol.Engines)
	} else if run != nil {
		t.Logf("damascus: %s; on huge pages: %s", run.Protocol.Engines[0].Notes, run.Protocol.Engines[0].WeightsOnHugePages)
	}
	// The tiny preset's layer weights (2 layers of q, o 256×256; k, v
	// 128×256; gate, up, down 768×256) and the prefill rows' int8 work.
	if run := recs[0].Run; run != nil && run.Protocol.Model != nil {
		if got := run.Protocol.Model.LayerWeights; got != 2*(2*256*256+2*128*256+3*768*256) {
			t.Errorf("layer weights %d", got)
		}
		for _, r := range recs[1:] {
			if e := r.E2E; e != nil && e.Test == "pp16" && !strings.Contains(e.Notes, "G multiply-adds a token") {
				t.Errorf("%s pp16 notes lack the int8 work: %q", e.Engine, e.Notes)
			}
		}
	}
	// The probe read after each round (protocol round_probe), and the
	// decode rows set against it.
	if run := recs[0].Run; run != nil {
		if !run.Protocol.E2E.RoundProbe || run.Roofline == nil || len(run.Roofline.Rounds) != 3 { // before, and after each of 2 rounds
			t.Errorf("round probes not recorded: protocol %+v, roofline %+v", run.Protocol.E2E, run.Roofline)
		}
		// Without the probe's kernels (-tags noasm) the probes are skipped
		// and the notes say nothing of them.
		probed := run.Roofline != nil && len(run.Roofline.Rounds) > 0 && run.Roofline.Rounds[0].Skipped == ""
		for _, r := range recs[1:] {
			e := r.E2E
			if e == nil || e.Test != "tg4" {
				continue
			}
			if has := strings.Contains(e.Notes, "against the probes either side of each round"); has != probed || strings.HasSuffix(e.Notes, "; ") || strings.Contains(e.Notes, "( pages)") {
				t.Errorf("%s tg4 notes (rounds probed: %v): %q", e.Engine, probed, e.Notes)
			}
		}
	}
	// Each engine's KV cache type, its default here.
	if run := recs[0].Run; run != nil {
		if got, want := record.KVCaches(run), "damascus f32, llama.cpp f16"; got != want || len(run.Protocol.Engines) < 2 || run.Protocol.Engines[1].KVCache != "f16" {
			t.Errorf("KV caches recorded as %q (engines %+v), want %q", got, run.Protocol.Engines, want)
		}
	}
}

// TestE2EBestOfLlamaConfigs: with several llama.cpp configurations each is
// recorded and the llama.cpp row is the best of them per test.
func TestE2EBestOfLlamaConfigs(t *testing.T) {
	dir := requireE2E(t)
	store := filepath.Join(dir, "ledger.jsonl")
	code, out, errOut := runCLI("e2e", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--pp", "8", "--tg", "2",
		"--runs", "1", "--threads", "1", "--cold-runs", "0", "--sustained", "0", "--llama-configs", "default,default+huge", "--store", store)
	if code != 0 {
		t.Fatalf("e2e: exit %d\n%s\n%s", code, out, errOut)
	}
	recs, err := record.Load(store)
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]int{}
	for _, r := range recs {
		if r.E2E != nil {
			engines[r.E2E.Engine]++
			if r.E2E.Engine == "llama.cpp" && !strings.Contains(r.E2E.Notes, "best of 2 configurations") {
				t.Errorf("llama.cpp row without its provenance: %q", r.E2E.Notes)
			}
		}
	}
	for _, e := range []string{"damascus", "llama.cpp", "llama.cpp/default", "llama.cpp/default+huge"} {
		if engines[e] != 3 { // pp8, tg2, peak-rss
			t.Errorf("engine %s: %d records (all: %v)", e, engines[e], engines)
		}
	}
}

// TestE2ERepsFlag: --reps sets the protocol's timed samples per round's
// process (1 by default); a value below 1 or not an integer is refused
// naming the flag, before anything is measured.
func TestE2ERepsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{{nil, 1}, {[]string{"--reps", "4"}, 4}} {
		var ef e2eFlags
		fs := flag.NewFlagSet("e2e", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		ef.register(fs, false)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if got := ef.opts.Protocol.RepsPerRound; got != c.want {
			t.Errorf("%q: repetitions per round %d, want %d", c.args, got, c.want)
		}
	}
	for _, v := range []string{"0", "-1", "x", "1.5"} {
		code, _, errOut := runCLI("e2e", "-m", "/nonexistent.gguf", "--reps", v)
		if code == 0 || !strings.Contains(errOut, "flag -reps") || strings.Contains(errOut, "panic") {
			t.Errorf("--reps %s: exit %d, stderr %q; want a refusal naming -reps", v, code, errOut)
		}
	}
	_, out, errOut := runCLI("e2e", "-h")
	if help := out + errOut; !strings.Contains(help, "-reps") || !strings.Contains(help, "depth legs") {
		t.Errorf("e2e -h does not explain --reps:\n%s", help)
	}
}

// TestE2EDepthSnapshot: with --depth-snapshot each engine fills the depth
// in its first round and reads it back in the next, the record says so,
// and the snapshots are gone after the run; without --depth it is refused.
func TestE2EDepthSnapshot(t *testing.T) {
	dir := requireE2E(t)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	store := filepath.Join(dir, "ledger.jsonl")
	code, out, errOut := runCLI("e2e", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--pp", "0", "--tg", "2", "--depth", "40",
		"--depth-snapshot", "--runs", "2", "--threads", "1", "--cold-runs", "0", "--sustained", "0", "--no-roofline", "--store", store)
	if code != 0 {
		t.Fatalf("e2e: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, eng := range []string{"damascus", "llama.cpp"} {
		for round, want := range []string{"filled, snapshot written", "snapshot read"} {
			line := fmt.Sprintf("sample round %d %s tg2@d40 (depth %s)", round+1, eng, want)
			if !strings.Contains(errOut, line) {
				t.Errorf("log lacks %q:\n%s", line, errOut)
			}
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the run left %d entries in $TMPDIR (%s)", len(left), left[0].Name())
	}
	recs, err := record.Load(store)
	if err != nil {
		t.Fatal(err)
	}
	if run := recs[0].Run; run == nil || run.Protocol.E2E == nil || !run.Protocol.E2E.DepthSnapshot {
		t.Errorf("the record does not say the depth came from snapshots: %+v", recs[0].Run)
	}
	code, _, errOut = runCLI("e2e", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--tg", "2", "--depth-snapshot")
	if code == 0 || !strings.Contains(errOut, "depth snapshot without a depth") {
		t.Errorf("--depth-snapshot without --depth: exit %d, %s", code, errOut)
	}
}
