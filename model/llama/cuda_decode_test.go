package llama

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The decode step's kernels against one another on the GPU: the same file
// and prompt, then decode steps (past a truncation, so that stale cache
// rows are overwritten), each step's logits compared with the serial
// decode attention's (DAttnEnv=serial). NormTailEnv and LongRowUEnv must
// give the same bits (mv_norm does add_rmsnorm's arithmetic, the _u4
// matvecs the same sums in the same order), the default (RopeFoldEnv=1:
// rope_store's arithmetic inside the fold) and the cuda-xs and cuda-pro
// products (MatVecEnv) fold's with rope_store; the fold decode attention
// (fold) and wv sum a split's weighted values in other orders, so they must
// agree to float32 rounding: the same top-1 and the engine agreement's
// cosine bars (0.9999 on tiny, 0.9995 on the 3B-shaped file, where float32
// summation order alone moves the logits by ~1e-4; on the H200 wv sat
// 0.99968 from serial there and fold 0.99977, both bit-identical on tiny).
// The 3B-shaped file decodes past position 1024, where a split of the
// attention spans more than one 32-position tile.
func TestCUDADecodeVariants(t *testing.T) {
	requireGPU(t)
	for _, tc := range decodeCases {
		t.Run(tc.preset+"/"+tc.typ, func(t *testing.T) {
			_, m, _ := synthModel(t, tc.preset, tc.typ)
			nctx, prompt := tc.size()
			bar := 0.9999
			if tc.long {
				bar = 0.9995
			}
			tokens := randomTokens(rand.New(rand.NewPCG(5, 6)), prompt+24, m.Config.Vocab)
			run := func(env map[string]string) [][]float32 {
				t.Helper()
				for _, k := range []string{NormTailEnv, DAttnEnv, LongRowUEnv, RopeFoldEnv, MatVecEnv} {
					t.Setenv(k, env[k])
				}
				c, err := m.NewContext(Options{NCtx: nctx, NBatch: 512, Device: DeviceCUDA})
				if err != nil {
					t.Fatalf("%v: %v", env, err)
				}
				defer c.Close()
				l, err := c.Eval(tokens[:prompt], false)
				if err != nil {
					t.Fatalf("%v: prefill: %v", env, err)
				}
				out := [][]float32{slices.Clone(l)}
				for i, tk := range tokens[prompt:] {
					if i == 16 {
						if err := c.Truncate(prompt + 4); err != nil {
							t.Fatal(err)
						}
					}
					l, err := c.Eval([]int32{tk}, false)
					if err != nil {
						t.Fatalf("%v: decode at position %d: %v", env, c.Pos(), err)
					}
					out = append(out, slices.Clone(l))
				}
				return out
			}
			// The reference is serial (cuda-flash), the graph's longest-standing
			// decode attention; the default (fold) is one of the arms.
			serial := run(map[string]string{DAttnEnv: "serial"})
			fold := run(map[string]string{RopeFoldEnv: "0"})
			for _, v := range []struct {
				env  map[string]string
				bits bool
				ref  [][]float32
			}{
				{map[string]string{NormTailEnv: "1", DAttnEnv: "serial"}, true, serial},
				{map[string]string{LongRowUEnv: "4", DAttnEnv: "serial"}, true, serial},
				{map[string]string{RopeFoldEnv: "0"}, false, serial},
				{map[string]string{DAttnEnv: "wv"}, false, serial},
				{map[string]string{NormTailEnv: "1", DAttnEnv: "wv"}, false, serial},
				// rope_store's work inside the fold: the same arithmetic, so
				// the same bits as the fold after rope_store.
				{nil, true, fold}, // the default: RopeFoldEnv=1
				// cuda-xs: the warp-per-row kernels' sums, so their bits.
				{map[string]string{MatVecEnv: "xs"}, true, fold},
				{map[string]string{MatVecEnv: "xs1"}, true, fold},
				{map[string]string{MatVecEnv: "xs4"}, true, fold},
				// cuda-early: the same loads and sums, issued earlier.
				{map[string]string{MatVecEnv: "early"}, true, fold},
				{map[string]string{MatVecEnv: "early2"}, true, fold},
				// cuda-pro: add_rmsnorm, silu_mul_q and quantize_q8_k done by
				// the product's blocks, with their arithmetic: the same bits.
				{map[string]string{MatVecEnv: "pro"}, true, fold},
				{map[string]string{MatVecEnv: "pro2"}, true, fold},
			} {
				want := v.ref
				got := run(v.env)
				identical, worst := 0, 1.0
				for i := range want {
					s := compareLogits(got[i], want[i])
					same := slices.Equal(got[i], want[i])
					if same {
						identical++
					}
					worst = min(worst, s.cosine)
					if (v.bits && !same) || !s.top1Agree || math.IsNaN(s.cosine) || s.cosine < bar {
						t.Errorf("%v: step %d: cosine %.9f, max |Δ| %.3g, top-1 agrees %v (bit-identical wanted: %v)",
							v.env, i, s.cosine, s.maxAbs, s.top1Agree, v.bits)
					}
				}
				t.Logf("%v: %d of %d steps bit-identical to the reference, worst cosine %.9f", v.env, identical, len(want), worst)
			}
		})
	}
}

// decodeCase is a synthetic model file the CUDA decode comparisons run; a
// long one decodes past position 1024, where a split of the attention spans
// more than one 32-position tile.
type decodeCase struct {
	preset, typ string
	long        bool
}

// decodeCases are the files both decode comparisons (the variants against
// serial, the persistent kernel against the graph) run over.
var decodeCases = []decodeCase{
	{"tiny", "Q4_K_M", false}, {"tiny", "Q8_0", false}, {"llama3.2-3b-2l", "Q4_K_M", true},
}

// size is the context and prompt a case decodes with (24 more tokens follow
// the prompt).
func (c decodeCase) size() (nctx, prompt int) {
	if c.long {
		return 1152, 1030
	}
	return 96, 24
}

// randomTokens draws n token ids below vocab from rng.
func randomTokens(rng *rand.Rand, n, vocab int) []int32 {
	tokens := make([]int32, n)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(vocab))
	}
	return tokens
}
