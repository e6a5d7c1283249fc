package llama

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/synth/synthtest"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/tokenizertest"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// requireLlamaCpp is the tests' gate on the pinned llama.cpp, under the name
// this package's tests (the CUDA ones too) call it by.
var requireLlamaCpp = oracle.RequireLlamaCpp

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

// topK returns the indices of the k largest values, largest first; equal
// values keep index order (as a stable sort would). One pass: the vocabulary
// is 128256 wide and this runs for every position of every comparison.
func topK(x []float32, k int) []int {
	idx := make([]int, 0, k+1)
	for i, v := range x {
		if len(idx) == k && !(v > x[idx[k-1]]) {
			continue
		}
		p := len(idx)
		for p > 0 && x[idx[p-1]] < v {
			p--
		}
		idx = slices.Insert(idx, p, i)
		if len(idx) > k {
			idx = idx[:k]
		}
	}
	return idx
}

// llamaCppOptions is the llama.cpp context compared with our Context run
// with opts on n tokens: the same KV cache type (llama.cpp's default is F16;
// F32 is asked for when ours is F32), the same batch size (n_batch = n_ubatch
// = our NBatch, so llama.cpp's graph sees the same token groups), flash
// attention off (our Context has none) and the same thread count.
func llamaCppOptions(opts Options, n int) llamacpp.ContextOptions {
	nb := opts.NBatch
	if nb <= 0 {
		nb = 512 // our Context's default
	}
	nb = min(nb, n)
	return llamacpp.ContextOptions{NCtx: max(64, n), NBatch: nb, NUbatch: nb, Threads: max(opts.Threads, 1),
		FlashAttn: llamacpp.FlashAttnOff, KVCacheF32: opts.KVType == quant.F32, KVCacheBF16: opts.KVType == quant.BF16}
}

// runLlamaCpp returns llama.cpp's logits at every position of tokens.
func runLlamaCpp(t *testing.T, path string, mo llamacpp.ModelOptions, co llamacpp.ContextOptions, tokens []int32) [][]float32 {
	t.Helper()
	positions := make([]int, len(tokens))
	for i := range positions {
		positions[i] = i
	}
	return oracle.Logits(t, path, mo, co, tokens, positions)
}

// runOurs returns the production path's logits at every position of tokens
// (one Eval; NBatch 1 takes every token through the decode path, MatVec).
func runOurs(t *testing.T, m *Model, opts Options, tokens []int32) [][]float32 {
	t.Helper()
	opts.NCtx = len(tokens)
	l := evalLogits(t, m, opts, tokens, true) // a copy: each position's row is a slice of it
	V := m.Config.Vocab
	out := make([][]float32, len(tokens))
	for j := range out {
		out[j] = l[j*V : (j+1)*V : (j+1)*V]
	}
	return out
}

// spread summarizes two runs' logits over all positions: the smallest
// cosine, the largest absolute difference, and on how many positions where
// b's top-2 gap exceeds 1e-3 the top-1 ids differ.
type spread struct {
	cosine, maxAbs   float64
	decisive, misses int
}

func compareRuns(a, b [][]float32) spread {
	s := spread{cosine: 1}
	for j := range a {
		c := compareLogits(a[j], b[j])
		s.cosine, s.maxAbs = min(s.cosine, c.cosine), max(s.maxAbs, c.maxAbs)
		if c.decisive {
			s.decisive++
			if !c.top1Agree {
				s.misses++
			}
		}
	}
	return s
}

func (s spread) String() string {
	return fmt.Sprintf("min cosine %.7f  max-abs %-9.3g top-1 differs on %d of %d decisive positions", s.cosine, s.maxAbs, s.misses, s.decisive)
}

// checkAgainstLlamaCpp evaluates tokens at every position with the production
// path and with the pinned llama.cpp on the same file, configured alike (see
// llamaCppOptions), logs the comparison and fails on the criteria:
// cosine ≥ minCos everywhere, top-1 agreement wherever llama.cpp's top-2 gap
// exceeds 1e-3. maxMiss is the fraction of decisive positions whose top-1
// may differ (0: none may).
//
// Over a 16-bit KV cache the comparison is made against the nearer, at each
// position, of llama.cpp's two CPU kernel sets (repacked and plain), both
// llama.cpp's own answers: they differ only in the float summation order of
// the weight products, and rounding K, V, the query and the probabilities to
// 16 bits turns such ulps into 16-bit steps now and then (bf16's step is
// 2⁻⁸). Measured (2026-12-01): on an Intel AMX machine llama.cpp computes
// Q8_0 products on its AMX kernels, in another order than its plain ones;
// our AVX-512 Q8_0 kernel sums in the plain ones' order (1.0000000, max-abs
// 2.9e-6 against them over a bf16 cache on AMD), and the pure-Go order
// (DAMASCUS_KERNELS=matvec/q8_0=go-unrolled) gives exactly the Intel
// failure's figures, 0.9997357 and max-abs 0.304 at position 11 — larger
// than the whole effect of the cache type (llama.cpp F32 vs F16 cache:
// 0.9998177). Where our products themselves run in pure Go (noasm, or SIMD
// hidden), no llama.cpp kernel shares their order, so over a 16-bit cache
// the strict criterion is reported, not asserted, and a floor (cosine ≥
// 0.999, top-1 on 90% of decisive positions) is; the F32 cache keeps the
// strict criterion everywhere, and the kernel gate checks the 16-bit
// roundings themselves against float64.
func checkAgainstLlamaCpp(t *testing.T, path string, m *Model, tokens []int32, opts Options, minCos, maxMiss float64) {
	t.Helper()
	co := llamaCppOptions(opts, len(tokens))
	theirs := runLlamaCpp(t, path, llamacpp.ModelOptions{}, co, tokens)
	ours := runOurs(t, m, opts, tokens)
	half := opts.KVType == quant.F16 || opts.KVType == quant.BF16
	var plain [][]float32
	if half {
		plain = runLlamaCpp(t, path, llamacpp.ModelOptions{NoRepack: true}, co, tokens)
		t.Logf("%s, KV %s: llama.cpp repacked vs plain kernels: %v", filepath.Base(path), opts.KVType, compareRuns(plain, theirs))
		if goKernels := pureGoProducts(m); len(goKernels) > 0 {
			t.Logf("%s, KV %s: our weight products run in pure Go (%s), an order no llama.cpp kernel shares: strict criterion reported, floor asserted",
				filepath.Base(path), opts.KVType, strings.Join(goKernels, ", "))
			minCos, maxMiss = min(minCos, 0.999), max(maxMiss, 0.1)
		}
	}
	overlap, agree := 0, 0
	nearest := make([][]float32, len(tokens))
	for j := range tokens {
		s := compareLogits(ours[j], theirs[j])
		nearest[j] = theirs[j]
		if plain != nil {
			if p := compareLogits(ours[j], plain[j]); p.cosine > s.cosine {
				s, nearest[j] = p, plain[j]
			}
		}
		overlap += s.top5Overlap
		if s.top1Agree {
			agree++
		}
		if s.decisive && !s.top1Agree && maxMiss == 0 {
			t.Errorf("position %d: top-1 differs from llama.cpp's (gap > 1e-3)", j)
		}
		if s.cosine < minCos {
			t.Errorf("position %d: cosine %.7f < %g", j, s.cosine, minCos)
		}
	}
	sp := compareRuns(ours, nearest)
	what := "llama.cpp"
	if plain != nil {
		what = "llama.cpp (nearer of repacked and plain kernels at each position)"
	}
	t.Logf("%s, KV %s, batches of %d, %d threads, ours vs %s: %d positions, %v; top-1 %d/%d, top-5 overlap %.2f/5",
		filepath.Base(path), opts.KVType, co.NUbatch, co.Threads, what, len(tokens), sp, agree, len(tokens),
		float64(overlap)/float64(len(tokens)))
	if plain != nil {
		t.Logf("%s, KV %s: ours vs llama.cpp default kernels alone: %v", filepath.Base(path), opts.KVType, compareRuns(ours, theirs))
	}
	if sp.cosine < 0.9999 || sp.misses > 0 {
		t.Logf("issue criteria (cosine ≥ 0.9999, top-1 on every decisive position) NOT met")
	}
	if maxMiss > 0 && float64(sp.misses) > maxMiss*float64(sp.decisive) {
		t.Errorf("top-1 differs on %d of %d decisive positions", sp.misses, sp.decisive)
	}
}

// pureGoProducts lists the weight-product kernels (matvec and matmul) that
// the engine resolved for m's weight types and that are pure Go although
// this build has SIMD kernels (noasm leaves it none): their float summation
// order is their own, not that of any SIMD kernel of ours or llama.cpp's.
// An op that has no SIMD variant at all keeps the strict
// criterion: no machine runs it otherwise.
func pureGoProducts(m *Model) []string {
	chosen := map[string]string{}
	for _, c := range promoted.Chosen() {
		if op, v, ok := strings.Cut(c, ":"); ok {
			chosen[op] = v
		}
	}
	goFamily := func(f ledger.Family) bool {
		return f == ledger.FamilyNaive || f == ledger.FamilyGoUnrolled || f == ledger.FamilyMatVecLoop
	}
	simdBuild := false
	for _, v := range ledger.Default.All() {
		simdBuild = simdBuild || !goFamily(v.Family) && v.Family != ledger.FamilyPerToken
	}
	var out []string
	seen := map[string]bool{}
	for _, mat := range m.matrices() {
		for _, op := range []string{ledger.MatVecOp(mat.Type), ledger.MatMulOp(mat.Type)} {
			v, ok := chosen[op]
			if !ok || seen[op] || !(v == "naive" || v == "go-unrolled" || v == "quant") {
				continue
			}
			seen[op] = true
			hasSIMD := false
			for _, r := range ledger.Default.Variants(op) {
				hasSIMD = hasSIMD || !goFamily(r.Family)
			}
			if hasSIMD || !simdBuild {
				out = append(out, op+":"+v)
			}
		}
	}
	return out
}

// logSpread logs how far each engine moves from itself when only one setting
// changes (kernels, threads, batch size, KV cache type, flash attention), on
// the same file and tokens: the scale against which a comparison between the
// two engines is read. opts is our configuration in checkAgainstLlamaCpp
// (F16 cache); llama.cpp's base run is llamaCppOptions(opts).
func logSpread(t *testing.T, path string, m *Model, tokens []int32, opts Options) {
	t.Helper()
	opts.KVType = quant.F16
	base := llamaCppOptions(opts, len(tokens))
	lc := func(mo llamacpp.ModelOptions, edit func(*llamacpp.ContextOptions)) [][]float32 {
		co := base
		if edit != nil {
			edit(&co)
		}
		return runLlamaCpp(t, path, mo, co, tokens)
	}
	ourWith := func(edit func(*Options)) [][]float32 {
		o := opts
		edit(&o)
		return runOurs(t, m, o, tokens)
	}
	lcBase := lc(llamacpp.ModelOptions{}, nil)
	lcDecode := lc(llamacpp.ModelOptions{}, func(c *llamacpp.ContextOptions) { c.NBatch, c.NUbatch = 1, 1 })
	ours := runOurs(t, m, opts, tokens)
	oursDecode := ourWith(func(o *Options) { o.NBatch = 1 })
	rows := []struct {
		what string
		a, b [][]float32
	}{
		{"llama.cpp: repacked vs plain CPU kernels", lc(llamacpp.ModelOptions{NoRepack: true}, nil), lcBase},
		{fmt.Sprintf("llama.cpp: %d threads vs 1", base.Threads), lc(llamacpp.ModelOptions{}, func(c *llamacpp.ContextOptions) { c.Threads = 1 }), lcBase},
		{fmt.Sprintf("llama.cpp: n_ubatch %d vs 1 (decode path)", base.NUbatch), lcDecode, lcBase},
		{"llama.cpp: F32 vs F16 KV cache", lc(llamacpp.ModelOptions{}, func(c *llamacpp.ContextOptions) { c.KVCacheF32 = true }), lcBase},
		{"llama.cpp: flash attention on vs off", lc(llamacpp.ModelOptions{}, func(c *llamacpp.ContextOptions) { c.FlashAttn = llamacpp.FlashAttnOn }), lcBase},
		{fmt.Sprintf("ours: %d threads vs 1", opts.Threads), ourWith(func(o *Options) { o.Threads = 1 }), ours},
		{fmt.Sprintf("ours: NBatch %d vs 1 (MatVec decode path)", opts.NBatch), oursDecode, ours},
		{"ours: F32 vs F16 KV cache", ourWith(func(o *Options) { o.KVType = quant.F32 }), ours},
		{"ours vs llama.cpp, both token by token", oursDecode, lcDecode},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d positions, F16 KV cache unless said; each engine against itself with one setting changed:", filepath.Base(path), len(tokens))
	for _, r := range rows {
		fmt.Fprintf(&b, "\n  %-46s %v", r.what, compareRuns(r.a, r.b))
	}
	t.Log(b.String())
}

// logLlamaCppSelfConsistency logs how far llama.cpp's repacked CPU kernels
// and its plain ones disagree on the same file: the floor of any comparison.
func logLlamaCppSelfConsistency(t *testing.T, path string, tokens []int32) {
	t.Helper()
	co := llamaCppOptions(Options{Threads: 2}, len(tokens))
	a := runLlamaCpp(t, path, llamacpp.ModelOptions{}, co, tokens)
	b := runLlamaCpp(t, path, llamacpp.ModelOptions{NoRepack: true}, co, tokens)
	t.Logf("%s: llama.cpp repacked vs plain kernels: %v", filepath.Base(path), compareRuns(b, a))
}

// llamaCppLogits returns llama.cpp's logits after the last token.
func llamaCppLogits(t *testing.T, path string, tokens []int32) []float32 {
	t.Helper()
	co := llamacpp.ContextOptions{NCtx: max(64, len(tokens)), Threads: 2}
	return oracle.Logits(t, path, llamacpp.ModelOptions{}, co, tokens, []int{len(tokens) - 1})[0]
}

func TestStories260KLogitsMatchLlamaCpp(t *testing.T) {
	requireLlamaCpp(t)
	m, tok := openStories(t)
	text := testdata.TinyStoriesSample.Read(t)
	ids, err := tok.Encode(string(text[:600]), tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	path := testdata.Stories260KGGUF.Require(t)
	for _, kv := range []quant.Type{quant.F16, quant.F32} {
		checkAgainstLlamaCpp(t, path, m, ids, Options{Threads: 2, NBatch: 64, KVType: kv}, 0.9999, 0)
	}
	logSpread(t, path, m, ids, Options{Threads: 2, NBatch: 64})
}

// synthModel writes a synthetic Llama 3.2-shaped model of the given preset
// and llama.cpp file type into a temporary directory.
func synthModel(t *testing.T, preset, typ string) (string, *Model, *tokenizer.Tokenizer) {
	t.Helper()
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	return synthPreset(t, synthtest.Preset(t, preset), typ)
}

// synthPreset is synthModel for a shape of the test's own.
func synthPreset(t *testing.T, p synth.Preset, typ string) (string, *Model, *tokenizer.Tokenizer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%s.gguf", p.Name, typ))
	synthtest.Write(t, p, typ, 7, path)
	f, m := openModel(t, path)
	return path, m, tokenizertest.FromGGUF(t, f)
}

// The synthetic tiny model (Llama 3.2 shapes, rope_freqs, tied head, GQA) in
// F32, Q8_0 and Q4_K_M: production against llama.cpp at every position, with
// the KV cache in F16 (llama.cpp's default; our F16 attention rounds as its
// CPU graph does) and in F32, llama.cpp configured alike each time (cache
// type, batch size, threads, no flash attention: llamaCppOptions); and
// production against the reference layer by layer.
//
// The criteria hold on every file in both cache types. What is left
// is not a mismatch of configuration or of activation types but float
// summation order. Measured at commit 3e30c20 with llama.cpp's intermediate
// tensors read back through its eval callback (tiny Q4_K_M, 25 positions):
// the embedding and RMSNorm outputs are bit-identical and the activation
// types are llama.cpp's (Q8_K for Q4_K/Q6_K, Q8_0 for Q8_0), but every
// quantized product differs from llama.cpp's in the last bit on most outputs:
// the integer block sums agree, the float terms are added in another order
// (ggml's repacked Q4_K GEMM FMAs each 64-value pair into a sums and a mins
// accumulator and subtracts once at the end; our tile epilogue adds
// dx·(d·S − dmin·M) per super-block). RoPE (ggml builds its angles in
// float32, theta *= theta_scale) and SiLU differ in the last bit too. With
// an F32 cache those ulps stay ulps (min cosine 1.0000000, max-abs < 4e-5).
// With an F16 cache, rounding K, V, the query and the probabilities to F16
// now and then turns an ulp into an F16 step, which can flip a Q8 rounding
// downstream: on Q4_K_M once, at position 20 (cosine 0.99993), on Q8_0 twice
// (0.99996). With the Q4_K products computed in ggml's order (a test-only
// experiment, not in the engine) position 20 agreed too (cosine 1.0000000).
// llama.cpp moves further from itself: repacked vs plain kernels, or prompt
// in one ubatch vs token by token, 0.99982 on Q4_K_M (logged by logSpread).
func TestSynthTinyMatchesLlamaCppAndReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four synthetic models (~2.5 minutes on 2 cores); skipped in -short")
	}
	requireLlamaCpp(t)
	for _, c := range []struct {
		typ       string
		unrounded float64 // production vs reference without activation rounding
	}{{"F32", 1 - 1e-8}, {"Q8_0", 0.999}, {"Q4_K_M", 0.998}, {"Q5_K_M", 0.998}} {
		t.Run(c.typ, func(t *testing.T) {
			path, m, tk := synthModel(t, "tiny", c.typ)
			if m.FreqFactors == nil || !m.Tied {
				t.Errorf("synthetic model: rope_freqs %v, tied %v; want both", m.FreqFactors != nil, m.Tied)
			}
			ids, err := tk.Encode("The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away, there lived a", tokenizer.AddSpecial)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Threads: 2, NBatch: 8}
			// Batches of 8 through the matmul (the small-batch crossover
			// off), the products in ggml's integer order; where this
			// processor has no matmul but the matvec looped (AVX-512 VNNI
			// hidden), or a matmul giving the matvec's bits, the
			// products are the decode's, and a 16-bit cache gets the decode
			// path's floor below; so does a matmul summing in an order of
			// its own (ownOrder: Q5_K's, Q8_0's and Q4_0's).
			t.Setenv(promoted.SmallBatchEnv, "0")
			looped := matVecLooped(t, m)
			for _, kv := range []quant.Type{quant.F16, quant.F32, quant.BF16} {
				opts.KVType = kv
				minCos, maxMiss := 0.9999, 0.0
				if kv != quant.F32 && looped != "" {
					// A 16-bit cache turns the last-bit differences
					// between our matvec's order and llama.cpp's vec_dot
					// into cosines near 0.9999 and flipped top-1s at
					// near-ties (the synthetic Q5_K_M, BF16: 0.99990 and
					// one decisive position of 25 through the AVX2
					// matvec), as llama.cpp's own F32-vs-F16 cache and
					// flash-attention switches do (logSpread).
					minCos, maxMiss = 0.9995, 0.1
					t.Logf("KV %s, batches of 8 through %s: the decode path's floor (cosine 0.9995, top-1 on 90%% of decisive positions)", kv, looped)
				}
				checkAgainstLlamaCpp(t, path, m, ids, opts, minCos, maxMiss)
			}
			logSpread(t, path, m, ids, opts)
			// And through the batched decode kernel where this processor's
			// crossover would take them (issue 19: a short prefill step),
			// whose products are the matvec's, rounded as our decode's:
			// with an F16 cache as far from llama.cpp as our token-by-token
			// decode is (0.99970 on Q4_K_M, logSpread), so that cache gets
			// the floor, the others the criterion.
			t.Setenv(promoted.SmallBatchEnv, "8")
			if c := mustContext(t, m, Options{NCtx: 64}); c.k.smallRows > 0 {
				c.Close()
				for _, kv := range []quant.Type{quant.F16, quant.F32, quant.BF16} {
					opts.KVType = kv
					minCos := 0.9999
					if kv == quant.F16 {
						minCos = 0.9995
					}
					t.Logf("KV %s, batches of 8 through the batched decode kernel:", kv)
					checkAgainstLlamaCpp(t, path, m, ids, opts, minCos, 0)
				}
			} else {
				c.Close()
			}
			t.Setenv(promoted.SmallBatchEnv, "0")
			for _, round := range []bool{true, false} {
				diffs, tie, err := m.CompareLayers(ids[:12], Options{Threads: 2, NBatch: 5}, round)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range diffs {
					t.Logf("production vs reference (activations rounded: %v): %v", round, d)
				}
				if tie != nil {
					// Compared up to a rounding on a tie (CompareLayers):
					// still at least half the positions at every layer.
					t.Logf("activations rounded: compared up to the reference's rounding at %v", tie)
					for _, d := range diffs {
						if d.Positions < 6 {
							t.Errorf("activations rounded: layer %d compared at %d of 12 positions before the tie; pick a prompt without an early one", d.Layer, d.Positions)
						}
					}
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

// matVecLooped names a matmul of m's whose products are the promoted
// matvec's on this processor, or "": one that loops the matvec
// (promoted.MatVecLoopName: no matmul variant runs here), or one whose
// outputs equal the matvec's bit for bit on 8 random tokens (a batched
// decode kernel serving as the matmul, as Q5_K's does) — a prefill then
// rounds as our decode does.
func matVecLooped(t *testing.T, m *Model) string {
	t.Helper()
	c := mustContext(t, m, Options{NCtx: 64})
	defer c.Close()
	for _, l := range c.k.layers {
		for _, op := range []linear{l.q, l.k, l.v, l.out, l.gate, l.up, l.down} {
			if strings.Contains(op.mmID, promoted.MatVecLoopName) || matVecProducts(t, op) || ownOrder(op.mmID) {
				return op.mmID
			}
		}
	}
	return ""
}

// ownOrder reports whether the matmul mmID sums its weight products in an
// order of its own, held to the decode path's floor like a matmul giving
// the matvec's bits. Measured 2026-12-05 on Zen 5, each with the F32 cache
// at cosine 1.0000000:
//
//   - Q5_K: llama.cpp has one Q5_K kernel on x86 (vec_dot_q5_K_q8_K, eight
//     float lanes a super-block, for its decode and its batches alike), no
//     repacked GEMM as for Q4_K, whose order our sub-block-sum GEMM shares;
//     avx512-vnni-sub sums one int32 a row and super-block (avx2-sub gives
//     its bits; the AMX tile program amx-int8-il, promoted on Intel, sums
//     in tiles, in neither's order). Synthetic
//     Q5_K_M: F16 0.9995649 and BF16 one near-tie top-1 of 25, as far as
//     llama.cpp's own n_ubatch 8 vs 1 (0.9995649) and F32 vs F16 cache
//     (0.9993875, one top-1) switches move it.
//   - Q8_0, Q4_0: avx512-vnni-gemm puts rows in lanes and adds each block's
//     d_w·d_x·Σ in turn, where llama.cpp's vec_dot keeps eight float lanes
//     of a row (avx2-gemm, for CPUs without AVX-512, in the same order).
//     Synthetic Q8_0: BF16 0.9997357 (F16 0.9999617), the figure
//     llama.cpp's own AMX Q8_0 kernels give against its plain ones (see
//     checkAgainstLlamaCpp) and its flash-attention switch gives (0.9997365).
func ownOrder(mmID string) bool {
	for _, p := range []string{"matmul/q5_k:avx512-vnni-sub", "matmul/q5_k:avx2-sub", "matmul/q5_k:amx-int8-il", "matmul/q8_0:avx512-vnni-gemm", "matmul/q4_0:avx512-vnni-gemm",
		"matmul/q8_0:avx2-gemm", "matmul/q4_0:avx2-gemm"} {
		if strings.HasPrefix(mmID, p) {
			return true
		}
	}
	return false
}

// matVecProducts reports whether op's matmul gives its matvec's outputs
// bit for bit (weights as stored for both; false where either reads a
// layout of its own).
func matVecProducts(t *testing.T, op linear) bool {
	t.Helper()
	if op.layout != nil || op.mlayout != nil {
		return false
	}
	const n = 8
	w := op.w
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, n*w.Cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	xb, err := quant.RowSize(op.at, int64(w.Cols))
	if err != nil {
		t.Fatal(err)
	}
	xq := make([]byte, n*int(xb))
	for j := range n {
		if err := quant.Quantize(op.at, x[j*w.Cols:(j+1)*w.Cols], xq[j*int(xb):(j+1)*int(xb)]); err != nil {
			t.Fatal(err)
		}
	}
	mm := make([]float32, n*w.Rows)
	op.mm(mm, w.Rows, w.Data, w.Rows, xq, n, w.Cols)
	mv := make([]float32, w.Rows)
	for j := range n {
		op.mv(mv, w.Data, xq[j*int(xb):(j+1)*int(xb)], w.Cols)
		for r := range w.Rows {
			if math.Float32bits(mv[r]) != math.Float32bits(mm[j*w.Rows+r]) {
				return false
			}
		}
	}
	return true
}
