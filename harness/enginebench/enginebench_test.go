package enginebench

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/harness/llamabench/llamabenchtest"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/llama"
)

func TestArgs(t *testing.T) {
	a := Config{Spec: llamabench.Spec{Model: "m.gguf", Prompt: []int{512, 1024}, Gen: []int{128}, Threads: 2, Reps: 3, Seed: 7, Depth: 4096}, NBatch: 256}.Args()
	for _, want := range []string{"-m=m.gguf", "-p=512,1024", "-n=128", "-t=2", "-b=256", "-r=3", "-seed=7", "-no-warmup=false", "-d=4096"} {
		if !slices.Contains(a, want) {
			t.Errorf("Args() = %v lacks %s", a, want)
		}
	}
}

func TestBadConfigs(t *testing.T) {
	for _, cfg := range []Config{
		{Spec: llamabench.Spec{Model: "m.gguf"}},
		{Spec: llamabench.Spec{Model: "m.gguf", Prompt: []int{0}}},
		{Spec: llamabench.Spec{Model: "/nonexistent/m.gguf", Gen: []int{4}}},
		{Spec: llamabench.Spec{Model: "m.gguf", Gen: []int{4}, Depth: -1}},
	} {
		if _, err := Run(cfg); err == nil {
			t.Errorf("Run(%+v): no error", cfg)
		}
	}
	var stderr bytes.Buffer
	if err := Main([]string{"-p", "x"}, &bytes.Buffer{}, &stderr); err == nil || !strings.Contains(stderr.String()+err.Error(), "not a number") {
		t.Errorf("bad -p: %v %s", err, stderr.String())
	}
}

// With a depth the tests run after that many cached tokens, named as
// llama-bench's "@d" tests; each repetition starts from the depth prompt
// again (the context holds depth and one test, so a repetition that did
// not would overflow it and fail).
func TestRunDepth(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	res, err := Run(Config{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 3, Threads: 1, Depth: 40}})
	if err != nil {
		t.Fatal(err)
	}
	llamabenchtest.CheckDepth(t, res.Tests, 3)
}

// A depth snapshot written by one run serves the next; the depth is the
// same tokens either way (llama.Context.ReadKV's test shows the cache is).
func TestRunDepthSnapshot(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	llamabenchtest.CheckSnapshot(t, 2, func(dir string) ([]llamabench.Test, error) {
		res, err := Run(Config{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 2, Threads: 1, Depth: 40, DepthSnapshot: dir}, KVType: "f16"})
		if err != nil {
			return nil, err
		}
		return res.Tests, nil
	})
}

// With depth threads above the bench's, a session starts that many workers
// but evaluates on the bench's, except inside WithThreads; a whole run with
// them measures the same tests.
func TestDepthThreads(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	res, err := Run(Config{Spec: llamabench.Spec{Model: model, Prompt: []int{8}, Gen: []int{4}, Reps: 3, Threads: 1, Depth: 40, DepthThreads: 3}})
	if err != nil {
		t.Fatal(err)
	}
	llamabenchtest.CheckDepth(t, res.Tests, 3)
	if a := res.Config.Args(); !slices.Contains(a, "-depth-threads=3") {
		t.Errorf("Args() = %v lacks -depth-threads=3", a)
	}

	ld, err := llama.Load(model, llama.LoadOptions{NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Close()
	e := engine{m: ld.Model, cfg: Config{Spec: llamabench.Spec{Threads: 1, DepthThreads: 3}, NBatch: 16}}
	s, err := e.NewSession(64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.(session).c
	inside := 0
	if err := s.(llamabench.ThreadSwitcher).WithThreads(3, func() error { inside = c.Threads(); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != 3 || c.Threads() != 1 {
		t.Errorf("threads inside WithThreads(3) %d, after %d; want 3 then 1", inside, c.Threads())
	}
	if err := s.(llamabench.ThreadSwitcher).WithThreads(4, func() error { t.Error("ran on more workers than started"); return nil }); err == nil {
		t.Error("WithThreads(4) of a session of 3 workers: no error")
	}
}

// TestRunPlacement: huge pages by default (or the file map, explained, where
// they are unavailable), the file map on request, and the result says which.
func TestRunPlacement(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	for _, w := range []string{"", "huge", "mmap"} {
		res, err := Run(Config{Spec: llamabench.Spec{Model: model, Gen: []int{4}, Reps: 1, Threads: 1}, Weights: w})
		if err != nil {
			t.Fatalf("weights %q: %v", w, err)
		}
		want := "huge"
		if w == "mmap" {
			want = "mmap"
		}
		if res.Config.Weights != want {
			t.Errorf("weights %q: recorded as asked %q", w, res.Config.Weights)
		}
		switch {
		case want == "mmap":
			if res.Placement != "mmap" || res.PlacementNotice != "" || res.FileReleased {
				t.Errorf("weights mmap: %q %q %v", res.Placement, res.PlacementNotice, res.FileReleased)
			}
		case res.Placement == "huge":
			if !res.FileReleased || res.PlacementNotice != "" {
				t.Errorf("weights %q on huge pages: released %v, notice %q", w, res.FileReleased, res.PlacementNotice)
			}
		case res.Placement != "mmap" || res.PlacementNotice == "":
			t.Errorf("weights %q: placement %q without a notice", w, res.Placement)
		default:
			t.Logf("huge pages unavailable: %s", res.PlacementNotice)
		}
		if len(res.Tests) != 1 || len(res.Tests[0].TokensPerSec) != 1 {
			t.Errorf("weights %q: tests %+v", w, res.Tests)
		}
	}
	if _, err := Run(Config{Spec: llamabench.Spec{Model: model, Gen: []int{4}}, Weights: "hugetlbfs"}); err == nil {
		t.Error("unknown placement accepted")
	}
	if a := (Config{Spec: llamabench.Spec{Model: "m.gguf"}, Weights: "mmap"}).Args(); !slices.Contains(a, "-weights=mmap") {
		t.Errorf("Args() = %v lacks -weights=mmap", a)
	}
}
