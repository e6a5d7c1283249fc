package llama

import (
	"math"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/internal/testmodel"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/quant"
)

// Pool by hand: three rows of two values.
func TestPool(t *testing.T) {
	h := []float32{1, 2, 3, 4, 5, 9}
	for _, c := range []struct {
		p    Pooling
		norm bool
		want []float32
	}{
		{PoolMean, false, []float32{3, 5}},
		{PoolCLS, false, []float32{1, 2}},
		{PoolLast, false, []float32{5, 9}},
		{PoolNone, false, h},
		{PoolMean, true, []float32{3 / float32(math.Sqrt(34)), 5 / float32(math.Sqrt(34))}},
		{PoolNone, true, []float32{1 / float32(math.Sqrt(5)), 2 / float32(math.Sqrt(5)), 3 / float32(5), 4 / float32(5),
			5 / float32(math.Sqrt(106)), 9 / float32(math.Sqrt(106))}},
	} {
		got := Pool(nil, h, 3, 2, c.p, c.norm)
		if len(got) != len(c.want) {
			t.Fatalf("%v normalize %v: %v, want %v", c.p, c.norm, got, c.want)
		}
		for i := range got {
			if math.Abs(float64(got[i]-c.want[i])) > 1e-6 {
				t.Errorf("%v normalize %v: %v, want %v", c.p, c.norm, got, c.want)
				break
			}
		}
	}
	if z := Pool(nil, []float32{0, 0}, 1, 2, PoolMean, true); z[0] != 0 || z[1] != 0 {
		t.Errorf("a zero vector normalized: %v, want zeros", z)
	}
	for _, s := range []string{"none", "mean", "cls", "last"} {
		if p, err := ParsePooling(s); err != nil || p.String() != s {
			t.Errorf("ParsePooling(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePooling("rank"); err == nil || !strings.Contains(err.Error(), "rank") {
		t.Errorf("ParsePooling(rank): %v, want an error naming it", err)
	}
}

// HiddenStates refuses what it cannot embed, with the reason.
func TestHiddenStatesRefuses(t *testing.T) {
	m := openTest(t, testmodel.Options{})
	c := mustContext(t, m, Options{NCtx: 8, Threads: 1})
	defer c.Close()
	for _, tc := range []struct {
		tokens []int32
		want   string
	}{
		{nil, "no tokens"},
		{make([]int32, 9), "exceed the context length 8"},
		{[]int32{1, int32(m.Config.Vocab)}, "outside the vocabulary"},
	} {
		if _, err := c.HiddenStates(tc.tokens); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d tokens: %v, want an error with %q", len(tc.tokens), err, tc.want)
		}
	}
}

// A sequence's hidden states do not depend on how it is batched or on what
// the context held before, and the cache is left holding the sequence.
func TestHiddenStatesBatches(t *testing.T) {
	m := openTest(t, testmodel.Options{})
	tokens := []int32{1, 5, 9, 14, 3, 7, 11, 2, 6, 8, 4}
	one := mustContext(t, m, Options{NCtx: 32, Threads: 2})
	defer one.Close()
	if _, err := one.Eval([]int32{3, 4, 5}, false); err != nil {
		t.Fatal(err)
	}
	a, err := one.HiddenStates(tokens)
	if err != nil {
		t.Fatal(err)
	}
	a = append([]float32(nil), a...)
	if one.Pos() != len(tokens) {
		t.Errorf("cache at %d after embedding %d tokens", one.Pos(), len(tokens))
	}
	split := mustContext(t, m, Options{NCtx: 32, NBatch: 1, Threads: 2}) // every token through the decode path
	defer split.Close()
	b, err := split.HiddenStates(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if s := compareLogits(a, b); s.cosine < 0.9999 {
		t.Errorf("one batch against one token a step: cosine %.7f, max-abs %.3g", s.cosine, s.maxAbs)
	}
}

// Damascus's pooled hidden states against llama.cpp's embeddings
// (llama_get_embeddings_seq, or _ith for pooling none) on the synthetic
// tiny model, F32 cache, the prompt in one batch in both engines.
func TestEmbeddingsMatchLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two synthetic models; skipped in -short")
	}
	oracle.RequireLlamaCpp(t)
	for _, typ := range []string{"F32", "Q4_K_M"} {
		t.Run(typ, func(t *testing.T) {
			path, m, tk := synthModel(t, "tiny", typ)
			ids, err := tk.Encode("Embeddings are the final hidden states after the output norm, pooled.", tokenizer.AddSpecial)
			if err != nil {
				t.Fatal(err)
			}
			n, dim := len(ids), m.Config.Dim
			c := mustContext(t, m, Options{NCtx: n, Threads: 2, KVType: quant.F32})
			defer c.Close()
			h, err := c.HiddenStates(ids)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []Pooling{PoolMean, PoolCLS, PoolLast, PoolNone} {
				co := llamacpp.ContextOptions{NCtx: max(64, n), NBatch: n, NUbatch: n, Threads: 2,
					FlashAttn: llamacpp.FlashAttnOff, KVCacheF32: true, Embeddings: true, Pooling: int(p)}
				lc := oracle.Context(t, path, llamacpp.ModelOptions{}, co)
				theirs, err := lc.Embeddings(ids)
				if err != nil {
					t.Fatal(err)
				}
				ours := Pool(nil, h, n, dim, p, false)
				if len(ours) != len(theirs) {
					t.Fatalf("pooling %v: %d values, llama.cpp %d", p, len(ours), len(theirs))
				}
				for v := 0; v < len(ours); v += dim {
					s := compareLogits(ours[v:v+dim], theirs[v:v+dim])
					if s.cosine < 0.99999 || s.maxAbs > 1e-3 {
						t.Errorf("pooling %v, vector %d: cosine %.7f, max-abs %.3g against llama.cpp", p, v/dim, s.cosine, s.maxAbs)
					}
					if v == 0 {
						t.Logf("pooling %v: cosine %.7f, max-abs %.3g against llama.cpp", p, s.cosine, s.maxAbs)
					}
				}
			}
		})
	}
}
