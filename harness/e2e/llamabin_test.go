package e2e

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/protocol"
)

// llamaBenchOutput is `llama-bench -m /tmp/llama3.2-3b.gguf -p 1024 -n 256
// -r 2 -ngl 99 -o jsonl` as the CUDA build printed it on the lent H200
// (results/device/20261201-s8-gpu-rounds-final.jsonl keeps these values),
// in jsonl_printer's own spacing: fields "k": v, then samples_ns and
// samples_ts with spaces inside the brackets.
const llamaBenchOutput = `{"build_commit": "unknown", "build_number": 0, "cpu_info": "Intel(R) Xeon(R) Processor", "gpu_info": "NVIDIA H200", "backends": "CUDA", "model_filename": "/tmp/llama3.2-3b.gguf", "model_type": "llama 3B Q4_K - Medium", "model_size": 2011539712, "model_n_params": 3212749888, "n_batch": 2048, "n_ubatch": 512, "n_threads": 16, "cpu_mask": "0x0", "cpu_strict": false, "poll": 50, "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99, "n_cpu_moe": 0, "split_mode": "layer", "main_gpu": 0, "no_kv_offload": false, "flash_attn": -1, "devices": "auto", "tensor_split": "0.00", "tensor_buft_overrides": "none", "load_mode": "auto", "lazy_mode": "auto", "embeddings": false, "no_op_offload": 0, "no_host": false, "fit_target": 0, "fit_min_ctx": 0, "n_prompt": 1024, "n_gen": 0, "n_depth": 0, "test_time": "2026-12-01T23:44:06Z", "avg_ns": 55688586, "stddev_ns": 333161, "avg_ts": 18388.297700, "stddev_ts": 109.954265, "samples_ns": [ 55453124, 55924049 ],"samples_ts": [ 18466, 18310.5 ]}
{"build_commit": "unknown", "build_number": 0, "cpu_info": "Intel(R) Xeon(R) Processor", "gpu_info": "NVIDIA H200", "backends": "CUDA", "model_filename": "/tmp/llama3.2-3b.gguf", "model_type": "llama 3B Q4_K - Medium", "model_size": 2011539712, "model_n_params": 3212749888, "n_batch": 2048, "n_ubatch": 512, "n_threads": 16, "cpu_mask": "0x0", "cpu_strict": false, "poll": 50, "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99, "n_cpu_moe": 0, "split_mode": "layer", "main_gpu": 0, "no_kv_offload": false, "flash_attn": -1, "devices": "auto", "tensor_split": "0.00", "tensor_buft_overrides": "none", "load_mode": "auto", "lazy_mode": "auto", "embeddings": false, "no_op_offload": 0, "no_host": false, "fit_target": 0, "fit_min_ctx": 0, "n_prompt": 0, "n_gen": 256, "n_depth": 0, "test_time": "2026-12-01T23:44:06Z", "avg_ns": 614459923, "stddev_ns": 6915397, "avg_ts": 416.652419, "stddev_ts": 4.689126, "samples_ns": [ 619349785, 609570062 ],"samples_ts": [ 413.337, 419.968 ]}
`

func TestParseLlamaBenchJSONL(t *testing.T) {
	lines, err := parseLlamaBenchJSONL([]byte(llamaBenchOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	l := lines[0]
	if l.BuildCommit != "unknown" || l.BuildNumber != 0 || l.Backends != "CUDA" || l.GPUInfo != "NVIDIA H200" ||
		l.NGPULayers != 99 || l.TypeK != "f16" || l.TypeV != "f16" || string(l.FlashAttn) != "-1" || l.NBatch != 2048 || l.NUBatch != 512 {
		t.Errorf("build fields %+v", l)
	}
	tests, err := llamaBenchTests(lines, benchSpec{prompt: []int{1024}, gen: []int{256}, reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"pp1024": {18466, 18310.5}, "tg256": {413.337, 419.968}}
	if !reflect.DeepEqual(tests, want) {
		t.Errorf("tests %v, want %v", tests, want)
	}
	if dev, info := llamaBenchDevice(l); dev != "cuda" || !strings.Contains(info, "NVIDIA H200") || !strings.Contains(info, "n_gpu_layers 99") {
		t.Errorf("device %q (%s)", dev, info)
	}
	// At a depth the names carry it, as Damascus's bench names its tests.
	deep := strings.ReplaceAll(llamaBenchOutput, `"n_depth": 0`, `"n_depth": 4096`)
	lines, err = parseLlamaBenchJSONL([]byte(deep))
	if err != nil {
		t.Fatal(err)
	}
	if tests, err := llamaBenchTests(lines, benchSpec{prompt: []int{1024}, gen: []int{256}, reps: 2, depth: 4096}); err != nil || len(tests["tg256@d4096"]) != 2 {
		t.Errorf("at depth: %v, %v", tests, err)
	}
}

func TestParseLlamaBenchJSONLErrors(t *testing.T) {
	first, second, _ := strings.Cut(llamaBenchOutput, "\n")
	for _, c := range []struct{ name, out, want string }{
		{"empty", "", "no results"},
		{"markdown", "| model | size |\n", "line 1 is not a jsonl record"},
		{"torn", first + "\n" + second[:100] + "\n", "line 2 is not a jsonl record"},
		{"no n_gen", strings.Replace(first, `"n_gen": 0, `, "", 1), "lacks n_prompt or n_gen"},
		{"combined", strings.Replace(first, `"n_gen": 0`, `"n_gen": 128`, 1), "combined test (pp1024+tg128)"},
		{"no samples", strings.Replace(first, `"samples_ts": [ 18466, 18310.5 ]`, `"samples_ts": [ ]`, 1), "pp1024) has no samples_ts"},
	} {
		if _, err := parseLlamaBenchJSONL([]byte(c.out)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.name, err, c.want)
		}
	}
	lines, err := parseLlamaBenchJSONL([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llamaBenchTests(lines, benchSpec{prompt: []int{1024}, gen: []int{256}, reps: 2}); err == nil || !strings.Contains(err.Error(), "lacks test tg256 (it reported pp1024)") {
		t.Errorf("missing test: %v", err)
	}
	if _, err := llamaBenchTests(lines, benchSpec{prompt: []int{1024}, reps: 3}); err == nil || !strings.Contains(err.Error(), "2 samples of pp1024, asked for 3") {
		t.Errorf("short of repetitions: %v", err)
	}
}

func TestLlamaBenchArgs(t *testing.T) {
	o := Options{Protocol: protocol.DefaultE2E(), Device: "cuda", LlamaBench: "/x/llama-bench", LlamaNGL: -1}
	got := llamaBenchArgs(o, "/m.gguf", benchSpec{prompt: []int{1024}, gen: []int{256}, reps: 1})
	want := []string{"-m", "/m.gguf", "-p", "1024", "-n", "256", "-r", "1", "-t", "2", "-ngl", "99", "-o", "jsonl"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args %q\nwant %q", got, want)
	}
	// A decode-only cold start with no warmup, at a depth, on f32 caches,
	// on the CPU with llama-bench's own -ngl.
	o.Device, o.KVType = "", "F32"
	got = llamaBenchArgs(o, "/m.gguf", benchSpec{gen: []int{64}, reps: 3, depth: 512, noWarmup: true})
	want = []string{"-m", "/m.gguf", "-p", "0", "-n", "64", "-r", "3", "-d", "512", "--no-warmup", "-t", "2", "-ctk", "f32", "-ctv", "f32", "-o", "jsonl"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args %q\nwant %q", got, want)
	}
	o.LlamaNGL, o.LlamaKVType = 0, "bf16"
	if got := llamaBenchFlags(o); !slices.Contains(got, "-ngl") || !slices.Contains(got, "bf16") {
		t.Errorf("flags %q lack -ngl 0 or the llama.cpp cache type", got)
	}
	// A prefill batch is both engines': llama-bench's -ub, its -b at least.
	o.Protocol.Batch = 1024
	if got := strings.Join(llamaBenchFlags(o), " "); !strings.Contains(got, "-b 2048 -ub 1024") {
		t.Errorf("flags %q lack -b 2048 -ub 1024", got)
	}
	if args := damascusConfig(o, "/m.gguf", benchSpec{prompt: []int{8}, reps: 1}).Args(); !slices.Contains(args, "-b=1024") {
		t.Errorf("damascus bench args %q lack -b=1024", args)
	}
}

func TestDamascusConfigDevice(t *testing.T) {
	o := Options{Protocol: protocol.DefaultE2E(), Device: "cuda", Weights: "mmap"}
	args := damascusConfig(o, "/m.gguf", benchSpec{prompt: []int{8}, reps: 1}).Args()
	if !slices.Contains(args, "-device=cuda") || !slices.Contains(args, "-weights=mmap") {
		t.Errorf("damascus bench args %q lack -device=cuda", args)
	}
	o.Device = "cpu"
	if args := damascusConfig(o, "/m.gguf", benchSpec{prompt: []int{8}, reps: 1}).Args(); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-device") }) {
		t.Errorf("cpu: args %q pass a device", args)
	}
}

// fakeScript writes an executable shell script standing for llama-bench.
func fakeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "llama-bench")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOptionsCheck(t *testing.T) {
	exe := fakeScript(t, "exit 0\n")
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ok := Options{Protocol: protocol.DefaultE2E(), Device: "cuda", LlamaBench: exe, LlamaNGL: -1}
	if err := ok.Check(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	if err := (Options{Protocol: protocol.DefaultE2E(), LlamaNGL: -1}).Check(); err != nil {
		t.Fatalf("the CPU default refused: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"device", func(o *Options) { o.Device = "metal" }, `--device "metal": want cpu or cuda`},
		{"cuda without llama-bench", func(o *Options) { o.LlamaBench = "" }, "--device cuda needs --llama-bench"},
		{"ngl without llama-bench", func(o *Options) { o.LlamaBench, o.Device, o.LlamaNGL = "", "", 99 }, "--llama-ngl needs --llama-bench"},
		{"source without llama-bench", func(o *Options) { o.LlamaBench, o.Device, o.LlamaSource = "", "", "x" }, "--llama-source needs --llama-bench"},
		{"configs", func(o *Options) { o.LlamaConfigs = "default,default+huge" }, "--llama-configs"},
		{"cpu variant", func(o *Options) { o.CPUVariant = "icelake" }, "--cpu-variant"},
		{"warmup prompt", func(o *Options) { o.Protocol.WarmupPromptTokens = 64 }, "--warmup-prompt"},
		{"depth threads", func(o *Options) { o.Protocol.Depth, o.Protocol.DepthThreads = 4096, 16 }, "--depth-threads"},
		{"missing binary", func(o *Options) { o.LlamaBench = filepath.Join(t.TempDir(), "none") }, "no such file"},
		{"directory", func(o *Options) { o.LlamaBench = t.TempDir() }, "not a regular file"},
		{"not executable", func(o *Options) { o.LlamaBench = plain }, "not executable"},
		{"protocol", func(o *Options) { o.Protocol.Runs = 0 }, "runs 0"},
		{"nominal", func(o *Options) { o.Protocol.NominalGBps = -1 }, "nominal bandwidth"},
	} {
		o := ok
		c.edit(&o)
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestLlamaBenchContender runs the contender over fake binaries: one that
// prints llama-bench's jsonl, one that fails, one that prints a table.
func TestLlamaBenchContender(t *testing.T) {
	o := Options{Protocol: protocol.DefaultE2E(), Device: "cuda", LlamaNGL: -1}
	b := benchSpec{prompt: []int{1024}, gen: []int{256}, reps: 2}
	// The fake checks that it was asked for jsonl and every layer on the GPU.
	o.LlamaBench = fakeScript(t, `case "$*" in *"-ngl 99"*"-o jsonl"*) ;; *) echo "unexpected flags: $*" >&2; exit 9 ;; esac
sleep 0.05
cat <<'EOF'
`+llamaBenchOutput+`EOF
`)
	c := llamaBenchContender(context.Background(), o, "/tmp/llama3.2-3b.gguf")
	out, sp, err := c.bench(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.tests["pp1024"]) != 2 || len(out.tests["tg256"]) != 2 || out.device != "cuda" || out.llamaBench == nil ||
		out.llamaBench.Backends != "CUDA" || !slices.Contains(out.llamaBench.Flags, "-ngl") {
		t.Errorf("bench out %+v, build %+v", out, out.llamaBench)
	}
	if sp.maxRSS <= 0 {
		t.Errorf("peak RSS of the fake not read: %d", sp.maxRSS)
	}
	c.s.add(out, sp, 0, c.name, &strings.Builder{})
	engines, lc := engineRecords(o, []*contender{{name: "damascus", s: newEngineSamples()}, c})
	if lc.Bench == nil || lc.Revision != "unknown" || engines[1].Device != "cuda" || engines[1].KVCache != "f16" || engines[0].Device != "" {
		t.Errorf("records: %+v, %+v", engines, lc)
	}

	o.LlamaBench = fakeScript(t, "echo 'ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected' >&2\nexit 1\n")
	_, _, err = llamaBenchContender(context.Background(), o, "/m.gguf").bench(b)
	if err == nil || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "no CUDA-capable device") {
		t.Errorf("failing binary: %v", err)
	}
	o.LlamaBench = fakeScript(t, "echo '| model | size | params |'\n")
	_, _, err = llamaBenchContender(context.Background(), o, "/m.gguf").bench(b)
	if err == nil || !strings.Contains(err.Error(), "not a jsonl record") {
		t.Errorf("table output: %v", err)
	}
	o.LlamaBench = filepath.Join(t.TempDir(), "gone")
	if _, _, err = llamaBenchContender(context.Background(), o, "/m.gguf").bench(b); err == nil || !strings.Contains(err.Error(), "starting") {
		t.Errorf("missing binary at spawn: %v", err)
	}
}

func TestVmHWM(t *testing.T) {
	if got := vmHWM([]byte("Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t  1234 kB\n")); got != 1234<<10 {
		t.Errorf("vmHWM = %d", got)
	}
	if got := vmHWM([]byte("Name:\tx\n")); got != -1 {
		t.Errorf("vmHWM without the line = %d", got)
	}
}
