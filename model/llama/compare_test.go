package llama

import (
	"testing"

	"github.com/damascus-llm/damascus/model/tokenizer"
)

// On F32 weights the production path differs from the float64 reference only
// by float32 rounding: every layer must agree to cosine 1−1e-9.
func TestProductionMatchesReferencePerLayer(t *testing.T) {
	m, tok := openStories(t)
	ids, err := tok.Encode("Once upon a time, there was a little girl named Lily. She loved to play", tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{Threads: 1}, {Threads: 2, NBatch: 5}} {
		diffs, _, err := m.CompareLayers(ids, opts, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			t.Logf("threads %d batch %d: %v", opts.Threads, opts.NBatch, d)
		}
		if l := FirstDivergence(diffs, 1-1e-9); l >= 0 {
			t.Errorf("threads %d batch %d: first diverging layer %d: %v", opts.Threads, opts.NBatch, l, diffs[l])
		}
		if d := diffs[len(diffs)-1]; d.MaxAbs > 1e-4 {
			t.Errorf("logits differ by %g", d.MaxAbs)
		}
	}
}
