package enginebench

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/harness/llamabench/llamabenchtest"
	"github.com/damascus-llm/damascus/internal/testdata"
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
