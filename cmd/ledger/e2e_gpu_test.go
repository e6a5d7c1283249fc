package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/protocol"
)

// fakeLlamaBenchEnv picks how the fake llama-bench misbehaves: "fail"
// (exit 1 after a CUDA error on stderr) or "drop-tg" (its decode tests
// missing from the output).
const fakeLlamaBenchEnv = "DAMASCUS_FAKE_LLAMA_BENCH"

// fakeLlamaBench stands for llama-bench when the test binary runs under
// that name (TestMain): it reads llama-bench's flags and prints one jsonl
// line a test in llama-bench's jsonl_printer layout, with the fields a CUDA
// build reports.
func fakeLlamaBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("llama-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("m", "", "")
	prompt := fs.String("p", "512", "")
	gen := fs.String("n", "128", "")
	reps := fs.Int("r", 5, "")
	depth := fs.Int("d", 0, "")
	threads := fs.Int("t", 4, "")
	ngl := fs.Int("ngl", -1, "")
	ctk := fs.String("ctk", "f16", "")
	ctv := fs.String("ctv", "f16", "")
	format := fs.String("o", "md", "")
	fs.Bool("no-warmup", false, "")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	switch {
	case os.Getenv(fakeLlamaBenchEnv) == "fail":
		fmt.Fprintln(stderr, "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected")
		return 1
	case *format != "jsonl" || *model == "":
		fmt.Fprintln(stderr, "fake llama-bench: want -m and -o jsonl")
		return 2
	}
	// Some memory to show in its peak RSS, and time for the poll to see it.
	ballast := make([]byte, 48<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	time.Sleep(40 * time.Millisecond)
	line := func(np, ng int) {
		var ns, ts []string
		for i := range *reps {
			d := int64(1e6 * (10 + i))
			ns = append(ns, strconv.FormatInt(d, 10))
			ts = append(ts, strconv.FormatFloat(float64(np+ng)*1e9/float64(d), 'g', 6, 64))
		}
		fmt.Fprintf(stdout, `{"build_commit": "fake0001", "build_number": 7001, "cpu_info": "Fake CPU", "gpu_info": "NVIDIA H200", "backends": "CUDA", "model_filename": %q, `+
			`"model_type": "llama ?B Q4_K - Medium", "model_size": 1000, "model_n_params": 1000, "n_batch": 2048, "n_ubatch": 512, "n_threads": %d, `+
			`"cpu_mask": "0x0", "cpu_strict": false, "poll": 50, "type_k": %q, "type_v": %q, "n_gpu_layers": %d, "n_cpu_moe": 0, "split_mode": "layer", `+
			`"main_gpu": 0, "no_kv_offload": false, "flash_attn": -1, "devices": "auto", "tensor_split": "0.00", "tensor_buft_overrides": "none", `+
			`"load_mode": "auto", "lazy_mode": "auto", "embeddings": false, "no_op_offload": 0, "no_host": false, "fit_target": 0, "fit_min_ctx": 0, `+
			`"n_prompt": %d, "n_gen": %d, "n_depth": %d, "test_time": "2026-12-02T01:00:00Z", "avg_ns": 1, "stddev_ns": 0, "avg_ts": 1.0, "stddev_ts": 0.0, `+
			`"samples_ns": [ %s ],"samples_ts": [ %s ]}`+"\n",
			*model, *threads, *ctk, *ctv, *ngl, np, ng, *depth, strings.Join(ns, ", "), strings.Join(ts, ", "))
	}
	for _, f := range strings.Split(*prompt, ",") {
		if n, _ := strconv.Atoi(f); n > 0 {
			line(n, 0)
		}
	}
	for _, f := range strings.Split(*gen, ",") {
		if n, _ := strconv.Atoi(f); n > 0 && os.Getenv(fakeLlamaBenchEnv) != "drop-tg" {
			line(0, n)
		}
	}
	return 0
}

// fakeLlamaBenchPath is this test binary under the name llama-bench.
func fakeLlamaBenchPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "llama-bench")
	if err := os.Symlink(self, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// externalBenchSetup is the start of the tests that run the tiny preset
// against the fake llama-bench: skipped in -short (saying why), the
// tokenizer and template required; it returns a temporary folder and the
// fake's path.
func externalBenchSetup(t *testing.T, why string) (dir, fake string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	return t.TempDir(), fakeLlamaBenchPath(t)
}

// TestE2EFlagsRefused: combinations that cannot run, or would not compare
// like with like, are refused before anything is measured.
func TestE2EFlagsRefused(t *testing.T) {
	fake := fakeLlamaBenchPath(t)
	plain := filepath.Join(t.TempDir(), "llama-bench")
	if err := os.WriteFile(plain, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "metal"}, `--device "metal": want cpu or cuda`},
		{[]string{"--device", "cuda"}, "--device cuda needs --llama-bench"},
		{[]string{"--llama-bench"}, "flag needs an argument: -llama-bench"},
		{[]string{"--llama-bench", filepath.Join(t.TempDir(), "none")}, "no such file"},
		{[]string{"--llama-bench", plain}, "not executable"},
		{[]string{"--llama-bench", t.TempDir()}, "not a regular file"},
		{[]string{"--llama-ngl", "99"}, "--llama-ngl needs --llama-bench"},
		{[]string{"--llama-bench", fake, "--llama-configs", "default,default+huge"}, "--llama-configs"},
		{[]string{"--llama-bench", fake, "--huge-pages"}, "--huge-pages"},
		{[]string{"--llama-bench", fake, "--warmup-prompt", "64"}, "--warmup-prompt"},
		{[]string{"--llama-bench", fake, "--llama-ngl", "-2"}, "-2 is outside the range"},
		{[]string{"--llama-bench", fake, "--nominal-gbps", "-1"}, "nominal bandwidth"},
	} {
		code, _, errOut := runCLI(append([]string{"e2e", "-m", "/nonexistent.gguf"}, c.args...)...)
		// Exit 2 for a refused combination; a flag the parser rejects
		// exits non-zero too.
		parse := strings.HasPrefix(c.want, "flag needs") || strings.Contains(c.want, "outside the range")
		if code == 0 || (code != 2 && !parse) || !strings.Contains(errOut, c.want) {
			t.Errorf("e2e %q: exit %d, stderr %q; want a refusal saying %q", c.args, code, errOut, c.want)
		}
	}
}

// TestE2EExternalLlamaBench runs the whole comparison with a fake
// llama-bench binary as llama.cpp: interleaved rounds, a cold start, peak
// RSS polled, the build and devices recorded, and `ledger report`'s
// baseline.md stating them.
func TestE2EExternalLlamaBench(t *testing.T) {
	dir, fake := externalBenchSetup(t, "spawns the engine several times")
	store := filepath.Join(dir, "results", "ledger.jsonl")
	jsonOut := filepath.Join(dir, "e2e.json")
	code, out, errOut := runCLI("e2e", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--pp", "16", "--tg", "4",
		"--runs", "2", "--threads", "1", "--cold-runs", "1", "--sustained", "0", "--no-roofline",
		"--llama-bench", fake, "--llama-ngl", "99", "--llama-source", "a fake for the test", "--nominal-gbps", "100",
		"--store", store, "--json", jsonOut)
	if code != 0 {
		t.Fatalf("e2e: exit %d\n%s\n%s", code, out, errOut)
	}
	var js struct {
		Protocol protocol.Record `json:"protocol"`
		Engines  map[string]map[string]struct {
			Samples []float64 `json:"samples"`
			Notes   string    `json:"notes"`
		} `json:"engines"`
		Ratios map[string]float64 `json:"ratios"`
	}
	readJSON(t, jsonOut, &js)
	for _, test := range []string{"pp16", "tg4", "cold-start", "peak-rss"} {
		if s := js.Engines["llama.cpp"][test]; len(s.Samples) == 0 {
			t.Errorf("llama.cpp %s: no samples (%+v)", test, js.Engines["llama.cpp"])
		}
	}
	// The fake's samples, 1e9·tokens/10ms and /11ms, as it printed them.
	if s := js.Engines["llama.cpp"]["tg4"].Samples; len(s) != 2 || s[0] != 400 {
		t.Errorf("llama.cpp tg4 samples %v, want the fake's [400 400]", s)
	}
	// The fake holds 48 MiB; the ledger's own size would not be that.
	if rss := js.Engines["llama.cpp"]["peak-rss"]; len(rss.Samples) != 2 || rss.Samples[0] < 48<<20 || !strings.Contains(rss.Notes, "/proc") {
		t.Errorf("llama.cpp peak RSS %+v", rss)
	}
	if !strings.Contains(js.Engines["llama.cpp"]["tg4"].Notes, "of the nominal 100 GB/s") {
		t.Errorf("decode note %q lacks the nominal bandwidth", js.Engines["llama.cpp"]["tg4"].Notes)
	}
	if js.Ratios["tg4"] <= 0 {
		t.Errorf("ratios %v", js.Ratios)
	}
	lc := js.Protocol.LlamaCpp
	if lc == nil || lc.Bench == nil || lc.Bench.BuildCommit != "fake0001" || lc.Bench.BuildNumber != 7001 || lc.Bench.Backends != "CUDA" ||
		lc.Bench.Binary != fake || len(lc.Bench.SHA256) != 64 || lc.Bench.Source != "a fake for the test" ||
		!slices.Equal(lc.Bench.Flags, []string{"-t", "1", "-ngl", "99"}) || lc.Bench.NGPULayers != 99 {
		t.Errorf("llama.cpp build not recorded: %+v %+v", lc, lc.Bench)
	}
	if e := js.Protocol.Engines; len(e) != 2 || e[0].Device != "cpu" || e[1].Device != "cuda" || !strings.Contains(e[1].DeviceInfo, "NVIDIA H200") {
		t.Errorf("devices: %+v", e)
	}
	code, _, errOut = runCLI("report", "--store", store, "--out", dir)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "baseline.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"external llama-bench `" + fake + "`", "build fake0001 (7001)", "devices: damascus cpu, llama.cpp cuda", "| decode tok/s | tg4"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("baseline.md lacks %q:\n%s", want, doc)
		}
	}
	recs, err := record.Load(store)
	if err != nil || len(recs) == 0 || recs[0].Run == nil || !strings.Contains(recs[0].Run.Command, "--llama-bench") {
		t.Errorf("store: %v, %v", len(recs), err)
	}
}

// TestE2EExternalLlamaBenchErrors: a failing llama-bench and one whose
// output lacks a test stop the run with an error that says which.
func TestE2EExternalLlamaBenchErrors(t *testing.T) {
	dir, fake := externalBenchSetup(t, "spawns the engine")
	for mode, want := range map[string]string{
		"fail":    "no CUDA-capable device is detected",
		"drop-tg": "llama-bench output lacks test tg2 (it reported pp8)",
	} {
		t.Setenv(fakeLlamaBenchEnv, mode)
		code, out, errOut := runCLI("e2e", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--pp", "8", "--tg", "2",
			"--runs", "1", "--threads", "1", "--cold-runs", "0", "--sustained", "0", "--no-roofline", "--llama-bench", fake, "--store", "")
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "llama.cpp bench") {
			t.Errorf("%s: exit %d, want 1 and an error saying %q\n%s\n%s", mode, code, want, out, errOut)
		}
	}
}
