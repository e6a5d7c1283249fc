package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/internal/testmodel"
)

// embed prints one unit vector of the model's width, or with --pooling none
// a vector a token; a bad pooling is refused naming it.
func TestEmbedCommand(t *testing.T) {
	model := testmodel.WriteTemp(t, testmodel.Options{})
	out, _ := mustRun(t, "embed", "-m", model, "-threads", "1", "hello world")
	var v []float64
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	if len(v) != testmodel.Default.Dim || math.Abs(n-1) > 1e-5 {
		t.Errorf("%d values of squared length %v, want %d of 1", len(v), n, testmodel.Default.Dim)
	}
	out, _ = mustRun(t, "embed", "-m", model, "-threads", "1", "--pooling", "none", "--no-normalize", "hello world")
	var rows [][]float64
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) < 2 || len(rows[0]) != testmodel.Default.Dim {
		t.Errorf("--pooling none: %d rows (%v)", len(rows), err)
	}
	fails(t, []string{"embed", "-m", model, "--pooling", "rank", "x"}, "--pooling", "rank")
	fails(t, []string{"embed", "-m", model, "--device", "cuda", "x"}, "CPU only")
}
