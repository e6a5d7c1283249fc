package ftype

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// llamaTensors lists a tied Llama model's tensors in a scrambled order, so
// that Plan has to find llama.cpp's order itself.
func llamaTensors(nLayer int, embd, ff, kv, vocab uint64) []Tensor {
	ts := []Tensor{
		{"token_embd.weight", []uint64{embd, vocab}, quant.F32},
		{"output_norm.weight", []uint64{embd}, quant.F32},
		{"rope_freqs.weight", []uint64{64}, quant.F32},
	}
	for i := 0; i < nLayer; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			Tensor{p + "attn_norm.weight", []uint64{embd}, quant.F32},
			Tensor{p + "attn_q.weight", []uint64{embd, embd}, quant.F32},
			Tensor{p + "attn_k.weight", []uint64{embd, kv}, quant.F32},
			Tensor{p + "attn_v.weight", []uint64{embd, kv}, quant.F32},
			Tensor{p + "attn_output.weight", []uint64{embd, embd}, quant.F32},
			Tensor{p + "ffn_norm.weight", []uint64{embd}, quant.F32},
			Tensor{p + "ffn_gate.weight", []uint64{embd, ff}, quant.F32},
			Tensor{p + "ffn_up.weight", []uint64{embd, ff}, quant.F32},
			Tensor{p + "ffn_down.weight", []uint64{ff, embd}, quant.F32},
		)
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	return ts
}

func planOf(t *testing.T, ft string, ts []Tensor, nLayer int) map[string]quant.Type {
	t.Helper()
	f, err := Parse(ft)
	if err != nil {
		t.Fatal(err)
	}
	types, err := f.Plan(ts, nLayer)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]quant.Type{}
	for i, tt := range ts {
		m[tt.Name] = types[i]
	}
	return m
}

// The Q4_K_M tables below are worked out by hand from use_more_bits
// (i < n/8 || i ≥ 7n/8 || (i − n/8) mod 3 = 2) for the layer counts of
// Llama 3.2 1B (16) and 3B (28) and the 2-layer CI presets.
func TestQ4KMMix(t *testing.T) {
	for _, c := range []struct {
		nLayer    int
		moreBits  []int
		embd, ff  uint64
		kv, vocab uint64
	}{
		{16, []int{0, 1, 4, 7, 10, 13, 14, 15}, 2048, 8192, 512, 128256},
		{28, []int{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}, 3072, 8192, 1024, 128256},
		{2, []int{1}, 256, 768, 128, 128256},
	} {
		plan := planOf(t, "Q4_K_M", llamaTensors(c.nLayer, c.embd, c.ff, c.kv, c.vocab), c.nLayer)
		check := func(name string, want quant.Type) {
			if plan[name] != want {
				t.Errorf("%d layers: %s is %s, want %s", c.nLayer, name, plan[name], want)
			}
		}
		check("token_embd.weight", quant.Q6_K) // tied: quantized as the output head
		check("output_norm.weight", quant.F32)
		check("rope_freqs.weight", quant.F32)
		for i := 0; i < c.nLayer; i++ {
			more := quant.Q4_K
			if slices.Contains(c.moreBits, i) {
				more = quant.Q6_K
			}
			p := fmt.Sprintf("blk.%d.", i)
			check(p+"attn_v.weight", more)
			check(p+"ffn_down.weight", more)
			for _, n := range []string{"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"} {
				check(p+n+".weight", quant.Q4_K)
			}
			check(p+"attn_norm.weight", quant.F32)
			check(p+"ffn_norm.weight", quant.F32)
		}
	}
}

func TestOtherMixes(t *testing.T) {
	ts := llamaTensors(16, 2048, 8192, 512, 128256)
	for _, c := range []struct {
		ft         string
		embd, rest quant.Type
	}{
		{"Q4_0", quant.Q6_K, quant.Q4_0}, // the tied head gets Q6_K
		{"Q8_0", quant.Q8_0, quant.Q8_0},
		{"F16", quant.F16, quant.F16},
		{"BF16", quant.BF16, quant.BF16},
		{"F32", quant.F32, quant.F32},
	} {
		plan := planOf(t, c.ft, ts, 16)
		for name, typ := range plan {
			want := c.rest
			switch {
			case name == "token_embd.weight":
				want = c.embd
			case len(name) > 12 && name[len(name)-12:] == "_norm.weight", name == "rope_freqs.weight":
				want = quant.F32
			}
			if typ != want {
				t.Errorf("%s: %s is %s, want %s", c.ft, name, typ, want)
			}
		}
	}
}

// An untied model keeps Q4_K for token_embd and gives output.weight Q6_K.
func TestUntiedOutput(t *testing.T) {
	ts := append(llamaTensors(2, 256, 768, 128, 1000), Tensor{"output.weight", []uint64{256, 1000}, quant.F32})
	plan := planOf(t, "Q4_K_M", ts, 2)
	if plan["token_embd.weight"] != quant.Q4_K || plan["output.weight"] != quant.Q6_K {
		t.Errorf("token_embd %s, output %s; want Q4_K, Q6_K", plan["token_embd.weight"], plan["output.weight"])
	}
}

// Rows that are not whole K-quant blocks fall back as llama.cpp does
// (stories260K's 64-wide tensors: Q4_K → Q5_0, Q6_K → Q8_0, output → Q8_0).
func TestFallback(t *testing.T) {
	ts := llamaTensors(5, 64, 172, 32, 512)
	plan := planOf(t, "Q4_K_M", ts, 5)
	if got := plan["blk.0.attn_q.weight"]; got != quant.Q5_0 {
		t.Errorf("attn_q: %s, want Q5_0", got)
	}
	if got := plan["token_embd.weight"]; got != quant.Q8_0 {
		t.Errorf("token_embd: %s, want Q8_0", got)
	}
	// With 5 layers use_more_bits picks layers 2 and 4.
	if got := plan["blk.0.attn_v.weight"]; got != quant.Q5_0 {
		t.Errorf("blk.0.attn_v: %s, want Q5_0", got)
	}
	if got := plan["blk.2.attn_v.weight"]; got != quant.Q8_0 { // Q6_K → Q8_0
		t.Errorf("blk.2.attn_v: %s, want Q8_0", got)
	}
	if got := plan["blk.2.ffn_down.weight"]; got != quant.F16 { // 172 is not a multiple of 32
		t.Errorf("blk.2.ffn_down: %s, want F16", got)
	}
}

func TestCompare(t *testing.T) {
	names := []string{"blk.10.attn_q.weight", "token_embd.weight", "blk.2.ffn_up.weight", "blk.2.attn_k.weight", "output_norm.weight", "rope_freqs.weight"}
	slices.SortFunc(names, Compare)
	want := []string{"output_norm.weight", "rope_freqs.weight", "token_embd.weight", "blk.2.attn_k.weight", "blk.2.ffn_up.weight", "blk.10.attn_q.weight"}
	if !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
}

func TestParse(t *testing.T) {
	ft, err := Parse("q4_k_m")
	if err != nil || ft.ID != 15 || ft.Base != quant.Q4_K {
		t.Errorf("Parse(q4_k_m) = %+v, %v", ft, err)
	}
	if _, err := Parse("Q3_K_XL"); err == nil {
		t.Error("Parse(Q3_K_XL) succeeded")
	}
}
