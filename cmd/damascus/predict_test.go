package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/llama/quality"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/tokenizertest"
)

// damascus predict lists the same top-5 ids as the pinned llama.cpp on the
// same file and tokens, with probabilities within 0.5 percentage points.
func TestPredictMatchesLlamaCpp(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	model := testdata.Stories260KGGUF.Require(t)
	const text = "Once upon a time, there was a little dog named"
	stdout, _ := mustRun(t, "predict", "-m", model, text)
	var ids []int
	var probs []float64
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		f := strings.Fields(line)
		id, err1 := strconv.Atoi(f[0])
		p, err2 := strconv.ParseFloat(strings.TrimSuffix(f[len(f)-1], "%"), 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unparsable line %q", line)
		}
		ids, probs = append(ids, id), append(probs, p)
	}
	if len(ids) != 5 {
		t.Fatalf("got %d lines, want 5:\n%s", len(ids), stdout)
	}

	toks, err := tokenizertest.Open(t, model).Encode(text, tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	co := llamacpp.ContextOptions{NCtx: 64, Threads: 2}
	logits := oracle.Logits(t, model, llamacpp.ModelOptions{}, co, toks, []int{len(toks) - 1})
	p := quality.Probs(logits[0])
	var report strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&report, "id %d: ours %.4f%% llama.cpp %.4f%%\n", id, probs[i], 100*p[id])
		if d := probs[i] - 100*p[id]; d > 0.5 || d < -0.5 {
			t.Errorf("id %d: probability %.4f%% vs llama.cpp's %.4f%%", id, probs[i], 100*p[id])
		}
		for j := range p {
			if p[j] > p[id] && !slices.Contains(ids[:i], j) {
				t.Errorf("rank %d: llama.cpp ranks id %d (%.4f%%) above our id %d", i+1, j, 100*p[j], id)
				break
			}
		}
	}
	t.Log("\n" + report.String())
}
