package quality

import (
	"math"
	"testing"

	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/tokenizertest"
)

// stories260K's perplexity on the TinyStories sample, by our engine and by
// the pinned llama.cpp through the same protocol, must agree within 1%; the
// KL divergence of a model from itself is zero.
func TestStories260KPerplexityMatchesLlamaCpp(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	path := testdata.Stories260KGGUF.Require(t)
	text := testdata.TinyStoriesSample.Read(t)
	f := gguftest.Open(t, path)
	m, err := llama.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizertest.FromGGUF(t, f)
	ids, err := tok.Encode(string(text), tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	const nCtx = 512
	chunks := Chunks{Tokens: ids, NCtx: nCtx, BOS: tok.BOS()}
	V := m.Config.Vocab

	c, err := m.NewContext(llama.Options{NCtx: nCtx, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ours := func(tokens []int32, from int) ([]float32, error) {
		if err := c.Truncate(0); err != nil {
			return nil, err
		}
		l, err := c.Eval(tokens, true)
		if err != nil {
			return nil, err
		}
		return l[from*V:], nil
	}

	lc := oracle.Context(t, path, llamacpp.ModelOptions{}, llamacpp.ContextOptions{NCtx: nCtx, Threads: 2})
	theirs := func(tokens []int32, from int) ([]float32, error) {
		pos := make([]int, len(tokens)-from)
		for i := range pos {
			pos[i] = from + i
		}
		rows, err := lc.Logits(tokens, pos)
		if err != nil {
			return nil, err
		}
		var flat []float32
		for _, r := range rows {
			flat = append(flat, r...)
		}
		return flat, nil
	}

	po, err := Perplexity(chunks, V, ours, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Perplexity(chunks, V, theirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tokens, %d chunks of %d: PPL ours %.4f ± %.4f, llama.cpp %.4f ± %.4f (%d scored)",
		len(ids), chunks.N(), nCtx, po.PPL, po.StdErr, pl.PPL, pl.StdErr, po.Count)
	if rel := math.Abs(po.PPL-pl.PPL) / pl.PPL; rel > 0.01 || po.Count != pl.Count {
		t.Errorf("perplexity %.4f vs llama.cpp's %.4f: %.3f%% apart", po.PPL, pl.PPL, 100*rel)
	}

	kl, err := KLDivergence(chunks, V, theirs, ours)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("KL(llama.cpp ‖ ours): mean %.3g, max %.3g, same top-1 %.2f%%, RMS Δp %.3g%%",
		kl.MeanKLD, kl.MaxKLD, 100*kl.SameTop1, 100*kl.RMSDeltaP)
	if kl.MeanKLD > 1e-4 {
		t.Errorf("mean KL divergence from llama.cpp %.3g", kl.MeanKLD)
	}
	self, err := KLDivergence(chunks, V, ours, ours)
	if err != nil {
		t.Fatal(err)
	}
	if self.MeanKLD != 0 || self.SameTop1 != 1 {
		t.Errorf("a model against itself: mean KLD %g, same top-1 %g", self.MeanKLD, self.SameTop1)
	}
}

func TestChunksRefuseShortText(t *testing.T) {
	c := Chunks{Tokens: make([]int32, 100), NCtx: 64, BOS: 1}
	if err := c.Check(); err == nil {
		t.Error("100 tokens accepted for a context of 64 (llama.cpp needs 128)")
	}
}
