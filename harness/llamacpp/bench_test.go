package llamacpp

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/harness/llamabench/llamabenchtest"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// benchChildEnv makes the test binary act as `ledger llama-bench`, so
// RunBench's spawn protocol is tested without building cmd/ledger.
const benchChildEnv = "DAMASCUS_LLAMACPP_TEST_BENCH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) == "1" {
		args := os.Args[1:]
		if len(args) == 0 || args[0] != BenchCommand {
			fmt.Fprintf(os.Stderr, "bench child: first argument %v, want %s\n", args, BenchCommand)
			os.Exit(2)
		}
		if err := BenchMain(args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func checkBenchResult(t *testing.T, res *BenchResult, reps int) {
	t.Helper()
	if len(res.Tests) != 2 || res.Tests[0].Name != "pp8" || res.Tests[1].Name != "tg4" {
		t.Fatalf("tests %+v; want pp8 and tg4", res.Tests)
	}
	for _, bt := range res.Tests {
		if len(bt.SamplesNs) != reps || len(bt.TokensPerSec) != reps {
			t.Errorf("%s: %d samples, %d rates; want %d", bt.Name, len(bt.SamplesNs), len(bt.TokensPerSec), reps)
		}
		for i, ns := range bt.SamplesNs {
			if ns <= 0 || bt.TokensPerSec[i] <= 0 {
				t.Errorf("%s sample %d: %d ns, %v tok/s", bt.Name, i, ns, bt.TokensPerSec[i])
			}
		}
	}
	if res.LlamaCpp.Commit != PinnedCommit || res.LlamaCpp.Version == "" ||
		(os.Getenv(DirEnv) == "" && res.LlamaCpp.Package != PinnedPackage) {
		t.Errorf("llama.cpp build %+v", res.LlamaCpp)
	}
	if !strings.Contains(res.SystemInfo, "CPU :") {
		t.Errorf("system info %q names no CPU backend", res.SystemInfo)
	}
	// The same file: the mapped path is the real one, LibDir may reach it
	// through a symbolic link (a baseline/ install linked from another
	// checkout).
	lib := filepath.Join(res.LlamaCpp.LibDir, "libggml-cpu-"+res.CPUVariant+".so")
	if res.CPUVariant == "" || !sameFile(res.CPUVariantLib, lib) {
		t.Errorf("CPU variant %q from %q; want the library %s", res.CPUVariant, res.CPUVariantLib, lib)
	}
	if res.ModelParams == 0 || res.ModelSize == 0 {
		t.Errorf("model params %d, size %d", res.ModelParams, res.ModelSize)
	}
}

func TestBenchInProcess(t *testing.T) {
	requireLib(t)
	model := testdata.Stories260KGGUF.Require(t)
	res, err := Bench(BenchConfig{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 2, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	checkBenchResult(t, res, 2)
	loaded, _ := CPUVariant()
	if res.CPUVariant != loaded {
		t.Errorf("result says variant %q, the process loaded %q", res.CPUVariant, loaded)
	}
	// Every variant ggml would pick on an x86-64 CPU with AVX reports it.
	if loaded != "x64" && loaded != "sse42" && !strings.Contains(res.SystemInfo, "AVX") {
		t.Errorf("variant %s, system info %q lacks AVX", loaded, res.SystemInfo)
	}
	if _, err := Bench(BenchConfig{Spec: llamabench.Spec{Model: model, Gen: []int{0}}}); err == nil {
		t.Error("Bench accepted tg0")
	}
}

// TestRunBenchSpawned runs the bench in a child process with huge pages
// asked for and the portable x64 CPU variant forced, and reads its JSON.
func TestRunBenchSpawned(t *testing.T) {
	requireLib(t)
	model := testdata.Stories260KGGUF.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := BenchConfig{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 1, Threads: 1}, Variant: "x64"}
	res, err := RunBench(ctx, cfg, SpawnOptions{
		Ledger:    os.Args[0],
		HugePages: true,
		Env:       []string{benchChildEnv + "=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkBenchResult(t, res, 1)
	if res.CPUVariant != "x64" {
		t.Errorf("child loaded variant %q, asked for x64", res.CPUVariant)
	}
	if res.GlibcTunables != HugePagesTunable {
		t.Errorf("child saw GLIBC_TUNABLES=%q", res.GlibcTunables)
	}
	// A variant that is not installed fails in the child with a clear error.
	cfg.Variant = "nosuch"
	if _, err := RunBench(ctx, cfg, SpawnOptions{Ledger: os.Args[0], Env: []string{benchChildEnv + "=1"}}); err == nil ||
		!strings.Contains(err.Error(), `variant "nosuch"`) {
		t.Errorf("bench with CPU variant nosuch: %v", err)
	}
	if res.Config.FlashAttn != FlashAttnAuto || res.Config.NBatch != 2048 || res.Config.Poll != 50 {
		t.Errorf("child's config %+v lacks llama-bench's defaults", res.Config)
	}
}

// With a depth the tests run after that many cached tokens: named as
// llama-bench's "@d" tests, the context sized for depth and test, each
// repetition starting from the depth prompt again (two repetitions of a
// test that fills the context would overflow it otherwise).
func TestBenchDepth(t *testing.T) {
	requireLib(t)
	model := testdata.Stories260KGGUF.Require(t)
	res, err := Bench(BenchConfig{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 2, Threads: 1, Depth: 40}})
	if err != nil {
		t.Fatal(err)
	}
	llamabenchtest.CheckDepth(t, res.Tests, 2)
	if _, err := Bench(BenchConfig{Spec: llamabench.Spec{Model: model, Gen: []int{4}, Depth: -1}}); err == nil {
		t.Error("negative depth accepted")
	}
	// The depth prompt on a batch threadpool of its own, the tests on one thread.
	res, err = Bench(BenchConfig{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 2, Threads: 1, Depth: 40, DepthThreads: 3}})
	if err != nil {
		t.Fatal(err)
	}
	llamabenchtest.CheckDepth(t, res.Tests, 2)
}

// A depth snapshot written by one run serves the next (llama_state_seq's
// files), and a session that read one decodes the next token to the logits
// of the session that filled it.
func TestBenchDepthSnapshot(t *testing.T) {
	requireLib(t)
	model := testdata.Stories260KGGUF.Require(t)
	llamabenchtest.CheckSnapshot(t, 2, func(dir string) ([]llamabench.Test, error) {
		res, err := Bench(BenchConfig{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 2, Threads: 1, Depth: 40, DepthSnapshot: dir}})
		if err != nil {
			return nil, err
		}
		return res.Tests, nil
	})

	m, err := OpenModel(model, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e := benchEngine{m: m, cfg: BenchConfig{Spec: llamabench.Spec{Model: model, Threads: 1}}.withDefaults()}
	toks := make([]int32, 30)
	for i := range toks {
		toks[i] = int32(1 + 11*i%400)
	}
	path := filepath.Join(t.TempDir(), "s.kv")
	next := func(load bool) []float32 {
		s, err := e.NewSession(64)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		bs := s.(*benchSession)
		if load {
			if err := bs.LoadSnapshot(path, toks); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := bs.Eval(toks); err != nil {
				t.Fatal(err)
			}
			if err := bs.SaveSnapshot(path, toks); err != nil {
				t.Fatal(err)
			}
		}
		if err := bs.c.decode([]int32{9}, bs.pos, []bool{true}); err != nil {
			t.Fatal(err)
		}
		p := m.l.llama.getLogitsIth(bs.c.h, 0)
		if p == nil {
			t.Fatal("no logits")
		}
		return append([]float32(nil), unsafe.Slice(p, bs.c.nVocab)...)
	}
	want, got := next(false), next(true)
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("logits after reading the snapshot differ from the filled session's (%d vs %d values)", len(got), len(want))
	}
	s, err := e.NewSession(64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := append([]int32{2}, toks[1:]...)
	if err := s.(*benchSession).LoadSnapshot(path, other); err == nil || !strings.Contains(err.Error(), "other tokens") {
		t.Errorf("a snapshot of other tokens: %v", err)
	}
}

// WithThreads attaches a batch threadpool of n threads for f and puts the
// session's own back after; the logits of a depth prompt made so, and of the
// tokens after it, are the ones a single-threaded session gives.
func TestBenchSessionWithThreads(t *testing.T) {
	requireLib(t)
	m, err := OpenModel(testdata.Stories260KGGUF.Require(t), ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	logits := func(depthThreads int) []float32 {
		e := benchEngine{m: m, cfg: BenchConfig{Spec: llamabench.Spec{Threads: 1}}}
		s, err := e.NewSession(64)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		bs := s.(*benchSession)
		prompt := []int32{1, 50, 60, 70, 80, 90, 100, 110}
		eval := func() error { return bs.Eval(prompt) }
		if depthThreads > 0 {
			err = bs.WithThreads(depthThreads, eval)
			if bs.c.batchThreads != depthThreads || bs.c.batchPool == 0 {
				t.Errorf("after WithThreads(%d): batch pool %#x of %d threads", depthThreads, bs.c.batchPool, bs.c.batchThreads)
			}
			if err := bs.WithThreads(depthThreads+1, eval); err == nil {
				t.Errorf("a second batch pool of another size: no error")
			}
		} else {
			err = eval()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := bs.c.decode([]int32{120}, bs.pos, []bool{true}); err != nil {
			t.Fatal(err)
		}
		p := m.l.llama.getLogitsIth(bs.c.h, 0)
		if p == nil {
			t.Fatal("no logits")
		}
		return append([]float32(nil), unsafe.Slice(p, bs.c.nVocab)...)
	}
	want, got := logits(0), logits(3)
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("logits after a 3-thread depth prompt differ from one thread's (%d vs %d values)", len(got), len(want))
	}
}

func TestBenchConfigArgsRoundTrip(t *testing.T) {
	in := BenchConfig{
		Spec: llamabench.Spec{Model: "/m.gguf", Prompt: []int{512, 1024}, Gen: []int{128}, Threads: 2,
			Reps: 10, NoWarmup: true, Seed: 9, WarmupPrompt: 64, Depth: 4096, DepthThreads: 2},
		NBatch: 256, NUbatch: 128, NoMmap: true, NoRepack: true, FlashAttn: FlashAttnOn, Poll: PollOff,
		Variant: "icelake", KVType: "bf16",
	}
	var out BenchConfig
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	out.RegisterFlags(fs)
	if err := fs.Parse(in.Args()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip through flags:\n in %+v\nout %+v", in, out)
	}
}

// sameFile reports whether paths a and b name one existing file.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
