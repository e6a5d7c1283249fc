package enginebench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestArgs(t *testing.T) {
	a := Config{Model: "m.gguf", Prompt: []int{512, 1024}, Gen: []int{128}, Threads: 2, NBatch: 256, Reps: 3, Seed: 7}.Args()
	for _, want := range []string{"-m=m.gguf", "-p=512,1024", "-n=128", "-t=2", "-b=256", "-r=3", "-seed=7", "-no-warmup=false"} {
		if !slices.Contains(a, want) {
			t.Errorf("Args() = %v lacks %s", a, want)
		}
	}
}

func TestBadConfigs(t *testing.T) {
	for _, cfg := range []Config{
		{Model: "m.gguf"},
		{Model: "m.gguf", Prompt: []int{0}},
		{Model: "/nonexistent/m.gguf", Gen: []int{4}},
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
