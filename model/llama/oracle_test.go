package llama

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/gguf"
	"github.com/damascus-llm/damascus/model/quant"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
)

func requireLlamaCpp(t *testing.T) {
	t.Helper()
	if err := llamacpp.Available(); err != nil {
		if errors.Is(err, llamacpp.ErrNotInstalled) {
			t.Skipf("%v (run make baseline)", err)
		}
		t.Fatal(err)
	}
}

// logitStats compares our logits with llama.cpp's at one position.
type logitStats struct {
	cosine, maxAbs float64
	top1Agree      bool
	decisive       bool // llama.cpp's top-2 gap exceeds 1e-3
	top5Overlap    int
}

func compareLogits(ours, theirs []float32) logitStats {
	var dot, na, nb float64
	var s logitStats
	for i := range ours {
		a, b := float64(ours[i]), float64(theirs[i])
		dot += a * b
		na += a * a
		nb += b * b
		s.maxAbs = max(s.maxAbs, math.Abs(a-b))
	}
	s.cosine = dot / math.Sqrt(na*nb)
	to, tt := topK(ours, 5), topK(theirs, 5)
	s.top1Agree = to[0] == tt[0]
	s.decisive = theirs[tt[0]]-theirs[tt[1]] > 1e-3
	for _, i := range to {
		if slices.Contains(tt, i) {
			s.top5Overlap++
		}
	}
	return s
}

func topK(x []float32, k int) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case x[a] > x[b]:
			return -1
		case x[a] < x[b]:
			return 1
		}
		return 0
	})
	return idx[:k]
}

// checkAgainstLlamaCpp evaluates tokens at every position with the production
// path and with the pinned llama.cpp on the same file, prints the per-position
// comparison and fails on the criteria: cosine ≥ minCos everywhere,
// top-1 agreement wherever llama.cpp's top-2 gap exceeds 1e-3.
// maxMiss is the fraction of decisive positions whose top-1 may differ
// (0: none may).
func checkAgainstLlamaCpp(t *testing.T, path string, m *Model, tokens []int32, opts Options, minCos, maxMiss float64) {
	t.Helper()
	lm, err := llamacpp.OpenModel(path, llamacpp.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	lc, err := lm.NewContext(llamacpp.ContextOptions{NCtx: max(64, len(tokens)), Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	positions := make([]int, len(tokens))
	for i := range positions {
		positions[i] = i
	}
	theirs, err := lc.Logits(tokens, positions)
	if err != nil {
		t.Fatal(err)
	}
	opts.NCtx = len(tokens)
	c, err := m.NewContext(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ours, err := c.Eval(tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	worstCos, worstAbs, agree, decisive, overlap, missed := 1.0, 0.0, 0, 0, 0, 0
	for j := range tokens {
		s := compareLogits(ours[j*V:(j+1)*V], theirs[j])
		worstCos, worstAbs = min(worstCos, s.cosine), max(worstAbs, s.maxAbs)
		overlap += s.top5Overlap
		if s.top1Agree {
			agree++
		}
		if s.decisive {
			decisive++
			if !s.top1Agree {
				missed++
				if maxMiss == 0 {
					t.Errorf("position %d: top-1 differs from llama.cpp's (gap > 1e-3)", j)
				}
			}
		}
		if s.cosine < minCos {
			t.Errorf("position %d: cosine %.6f < %g", j, s.cosine, minCos)
		}
	}
	t.Logf("%s KV %s vs llama.cpp (F16 KV): %d positions, min cosine %.7f, max-abs %.4g, top-1 %d/%d (%d decisive), top-5 overlap %.2f/5",
		filepath.Base(path), opts.KVType, len(tokens), worstCos, worstAbs, agree, len(tokens), decisive,
		float64(overlap)/float64(len(tokens)))
	if worstCos < 0.9999 || missed > 0 {
		t.Logf("issue criteria (cosine ≥ 0.9999, top-1 on every decisive position) NOT met: min cosine %.7f, %d decisive misses", worstCos, missed)
	}
	if maxMiss > 0 && float64(missed) > maxMiss*float64(decisive) {
		t.Errorf("top-1 differs on %d of %d decisive positions", missed, decisive)
	}
}

// logLlamaCppSelfConsistency logs how far llama.cpp's repacked CPU kernels
// and its plain ones disagree on the same file: the floor of any comparison.
func logLlamaCppSelfConsistency(t *testing.T, path string, tokens []int32) {
	t.Helper()
	positions := make([]int, len(tokens))
	for i := range positions {
		positions[i] = i
	}
	var out [2][][]float32
	for i, noRepack := range []bool{false, true} {
		lm, err := llamacpp.OpenModel(path, llamacpp.ModelOptions{NoRepack: noRepack})
		if err != nil {
			t.Fatal(err)
		}
		lc, err := lm.NewContext(llamacpp.ContextOptions{NCtx: max(64, len(tokens)), Threads: 2})
		if err != nil {
			lm.Close()
			t.Fatal(err)
		}
		out[i], err = lc.Logits(tokens, positions)
		lc.Close()
		lm.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	worst := 1.0
	for j := range tokens {
		worst = min(worst, compareLogits(out[0][j], out[1][j]).cosine)
	}
	t.Logf("%s: llama.cpp repacked vs plain kernels: min cosine %.7f", filepath.Base(path), worst)
}

// llamaCppLogits returns llama.cpp's logits after the last token.
func llamaCppLogits(t *testing.T, path string, tokens []int32) []float32 {
	t.Helper()
	lm, err := llamacpp.OpenModel(path, llamacpp.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	lc, err := lm.NewContext(llamacpp.ContextOptions{NCtx: max(64, len(tokens)), Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	l, err := lc.Logits(tokens, []int{len(tokens) - 1})
	if err != nil {
		t.Fatal(err)
	}
	return l[0]
}

func probs(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = max(m, float64(l))
	}
	p := make([]float64, len(logits))
	var sum float64
	for i, l := range logits {
		p[i] = math.Exp(float64(l) - m)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

func TestStories260KLogitsMatchLlamaCpp(t *testing.T) {
	requireLlamaCpp(t)
	m, tok := openStories(t)
	text, err := os.ReadFile(testdata.TinyStoriesSample.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(string(text[:600]), tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []quant.Type{quant.F32, quant.F16} {
		checkAgainstLlamaCpp(t, testdata.Stories260KGGUF.Require(t), m, ids, Options{Threads: 2, NBatch: 64, KVType: kv}, 0.9999, 0)
	}
}

var (
	vocabOnce sync.Once
	vocabKV   []gguf.KV
	vocabErr  error
)

// synthModel writes a synthetic Llama 3.2-shaped model of the given preset
// and llama.cpp file type into a temporary directory.
func synthModel(t *testing.T, preset, typ string) (string, *Model, *tokenizer.Tokenizer) {
	t.Helper()
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	vocabOnce.Do(func() { vocabKV, vocabErr = llama3vocab.Metadata() })
	if vocabErr != nil {
		t.Fatal(vocabErr)
	}
	p, err := synth.LookupPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := ftype.Parse(typ)
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := synth.Build(synth.Options{Preset: p, Type: ft, Seed: 7, Tokenizer: vocabKV, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%s.gguf", preset, typ))
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return path, m, tk
}

// The synthetic tiny model (Llama 3.2 shapes, rope_freqs, tied head, GQA) in
// F32, Q8_0 and Q4_K_M: production against llama.cpp at every position, and
// production against the reference layer by layer.
//
// With the F16 cache (llama.cpp's default) our attention rounds as
// llama.cpp's does (query and probabilities to F16). On F32 and Q8_0 the
// issue's criteria then hold. On Q4_K_M logits are identical for the first
// ~20 positions, then drift to cosine ~0.9997: any summation-order difference
// can flip a Q8_K rounding of an activation, and flips grow. llama.cpp is not
// self-consistent at that level either: its own repacked and plain Q4_K paths
// differ by cosine ~0.9998 (logged), so Q4_K_M is held to 0.9995.
//
// With the F32 cache the quantized files land at ~0.9998 (Q8_0) and ~0.9995
// (Q4_K_M): llama.cpp's F16 attention perturbs activations by ~5e-4, enough
// to flip Q8 roundings in the next product. Measured, with looser bounds.
func TestSynthTinyMatchesLlamaCppAndReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three synthetic models (~2 minutes on 2 cores); skipped in -short")
	}
	requireLlamaCpp(t)
	for _, c := range []struct {
		typ       string
		minCosF16 float64 // against llama.cpp, with our F16 cache
		minCosF32 float64 // against llama.cpp, with our F32 cache
		unrounded float64 // production vs reference without activation rounding
	}{{"F32", 0.9999, 0.9999, 1 - 1e-8}, {"Q8_0", 0.9999, 0.9995, 0.999}, {"Q4_K_M", 0.9995, 0.999, 0.998}} {
		t.Run(c.typ, func(t *testing.T) {
			path, m, tk := synthModel(t, "tiny", c.typ)
			if m.FreqFactors == nil || !m.Tied {
				t.Errorf("synthetic model: rope_freqs %v, tied %v; want both", m.FreqFactors != nil, m.Tied)
			}
			ids, err := tk.Encode("The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away, there lived a", tokenizer.AddSpecial)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstLlamaCpp(t, path, m, ids, Options{Threads: 2, NBatch: 8, KVType: quant.F16}, c.minCosF16, 0)
			logLlamaCppSelfConsistency(t, path, ids)
			maxMiss := 0.1 // F32 cache on quantized weights: see above
			if c.typ == "F32" {
				maxMiss = 0
			}
			checkAgainstLlamaCpp(t, path, m, ids, Options{Threads: 2, NBatch: 8}, c.minCosF32, maxMiss)
			for _, round := range []bool{true, false} {
				diffs, err := m.CompareLayers(ids[:12], Options{Threads: 2, NBatch: 5}, round)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range diffs {
					t.Logf("production vs reference (activations rounded: %v): %v", round, d)
				}
				minCos := c.unrounded
				if round {
					minCos = 1 - 1e-8
				}
				if l := FirstDivergence(diffs, minCos); l >= 0 {
					t.Errorf("activations rounded %v: first layer diverging from the reference: %d (%v)", round, l, diffs[l])
				}
			}
		})
	}
}
