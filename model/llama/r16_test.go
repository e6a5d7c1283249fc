package llama

import (
	"math"
	"testing"

	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// Under $DAMASCUS_R16 a decode's Q4_K and Q6_K products run through the
// interleaved copies: the logits agree with the shipped kernels' to float
// rounding (cosine, top-1) and the copies exist; a bad value is refused by
// NewContext, naming the variable.
func TestR16Decode(t *testing.T) {
	t.Setenv(promoted.R16Env, "1")
	if _, err := promoted.R16Mode(); err != nil {
		t.Skip(err) // noasm, another architecture, or no AVX-512 VNNI
	}
	_, m, _ := synthModel(t, "tiny", "Q4_K_M")
	prompt := []int32{1, 40, 80, 120, 160}
	decode := func(env string) [][]float32 {
		t.Setenv(promoted.R16Env, env)
		c := mustContext(t, m, Options{NCtx: 32, Threads: 2})
		defer c.Close()
		if _, err := c.Eval(prompt, false); err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		for _, tok := range []int32{5, 77, 300, 9} {
			lg, err := c.Eval([]int32{tok}, false)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]float32(nil), lg...))
		}
		if env != "" {
			has := map[quant.Type]bool{}
			for _, o := range c.k.layers {
				for _, l := range []linear{o.q, o.k, o.v, o.out, o.gate, o.up, o.down, c.k.output} {
					has[l.w.Type] = has[l.w.Type] || l.r16 != nil
				}
			}
			if !has[quant.Q4_K] || !has[quant.Q6_K] {
				t.Errorf("%s=%s: interleaved copies by type %v, want Q4_K and Q6_K", promoted.R16Env, env, has)
			}
		}
		return out
	}
	want := decode("")
	for _, env := range []string{"1", "pf4k"} {
		got := decode(env)
		for i := range want {
			var dot, a, b float64
			best, bestW := 0, 0
			for j := range want[i] {
				dot += float64(got[i][j]) * float64(want[i][j])
				a += float64(got[i][j]) * float64(got[i][j])
				b += float64(want[i][j]) * float64(want[i][j])
				if got[i][j] > got[i][best] {
					best = j
				}
				if want[i][j] > want[i][bestW] {
					bestW = j
				}
			}
			if cos := dot / math.Sqrt(a*b); cos < 0.99999 || best != bestW {
				t.Errorf("%s=%s, token %d: cosine %.7f, top-1 %d vs %d", promoted.R16Env, env, i, cos, best, bestW)
			}
		}
	}
	t.Setenv(promoted.R16Env, "fast")
	if _, err := m.NewContext(Options{NCtx: 32, Threads: 2}); err == nil {
		t.Errorf("%s=fast: no error", promoted.R16Env)
	}
}
