package llama

import (
	"os"
	"testing"

	"github.com/damascus-llm/damascus/model/llama/quality"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/quant"
)

// BigEnv enables the tests on full-size synthetic models (gigabytes, minutes).
const BigEnv = "DAMASCUS_BIG"

// The predict criterion on the synthetic Llama 3.2 3B in Q4_K_M: the
// same top-5 ids as llama.cpp, probabilities within 0.5 percentage points,
// with the F16 cache (llama.cpp's default, and its attention roundings).
// Every position's logits are compared and logged too. This model is not a
// CI model, and over 28 layers Q8_K rounding flips compound: we measured
// cosine 0.99922 and one top-1 flip in 6 positions, where llama.cpp's own
// repacked and plain kernels differ by cosine 0.99932 (logged beside it).
// So that part only bounds the cosine at 0.998.
func TestSynth3BQ4KMTop5MatchesLlamaCpp(t *testing.T) {
	if os.Getenv(BigEnv) == "" {
		t.Skipf("builds a 2 GB synthetic 3B model; set %s=1", BigEnv)
	}
	requireLlamaCpp(t)
	path, m, tk := synthModel(t, "llama3.2-3b", "Q4_K_M")
	ids, err := tk.Encode("The capital of France is", tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstLlamaCpp(t, path, m, ids, Options{Threads: 2, KVType: quant.F16}, 0.998, 1)
	logLlamaCppSelfConsistency(t, path, ids)
	ours := evalLogits(t, m, Options{NCtx: len(ids), Threads: 2, KVType: quant.F16}, ids, false)
	theirs := llamaCppLogits(t, path, ids)
	po, pt := quality.Probs(ours), quality.Probs(theirs)
	to, tt := topK(ours, 5), topK(theirs, 5)
	for i := range to {
		t.Logf("rank %d: ours id %d %.3f%%, llama.cpp id %d %.3f%%", i+1, to[i], 100*po[to[i]], tt[i], 100*pt[tt[i]])
		if to[i] != tt[i] {
			t.Errorf("rank %d: id %d, llama.cpp's %d", i+1, to[i], tt[i])
		}
		if d := 100 * (po[to[i]] - pt[to[i]]); d > 0.5 || d < -0.5 {
			t.Errorf("id %d: probability differs by %.3f points", to[i], d)
		}
	}
}
