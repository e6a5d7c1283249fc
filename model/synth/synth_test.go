package synth

import (
	"math"
	"testing"
)

// Llama 3 RoPE factors for head dim 64, base 500000, factor 32, low 1,
// high 4, original context 8192. By hand: wavelength_i = 2π·500000^(2i/64);
// it is under 8192/4 = 2048 for i ≤ 14 (factor 1), over 8192 for i ≥ 18
// (factor 32), and between for i = 15..17. For i = 16 the wavelength is
// 2π·√500000 = 4442.88, smooth = (8192/4442.88 − 1)/3 = 0.28129 and the
// factor 1/((1 − 0.28129)/32 + 0.28129) = 3.2922.
func TestRopeFactors(t *testing.T) {
	f := RopeFactors(64)
	if len(f) != 32 {
		t.Fatalf("%d factors, want 32", len(f))
	}
	for i, v := range f {
		switch {
		case i <= 14 && v != 1:
			t.Errorf("factor %d = %g, want 1", i, v)
		case i >= 18 && v != 32:
			t.Errorf("factor %d = %g, want 32", i, v)
		case i >= 15 && i <= 17 && (v <= 1 || v >= 32):
			t.Errorf("factor %d = %g, want strictly between 1 and 32", i, v)
		}
		if i > 0 && v < f[i-1] {
			t.Errorf("factors decrease at %d: %g < %g", i, v, f[i-1])
		}
	}
	if math.Abs(float64(f[16])-3.2922) > 5e-4 {
		t.Errorf("factor 16 = %g, want 3.2922", f[16])
	}
	// Head dim 128 (3B) has the same wavelengths at even indices of 64.
	g := RopeFactors(128)
	for i := range f {
		if g[2*i] != f[i] && math.Abs(float64(g[2*i]-f[i])) > 1e-5*float64(f[i]) {
			t.Errorf("dim 128 factor %d = %g, dim 64 factor %d = %g", 2*i, g[2*i], i, f[i])
		}
	}
}

func TestLookupPreset(t *testing.T) {
	p, err := LookupPreset("llama3.2-3b")
	if err != nil {
		t.Fatal(err)
	}
	if p.Embedding != 3072 || p.Layers != 28 || p.Heads != 24 || p.KVHeads != 8 || p.HeadDim != 128 || p.FFN != 8192 {
		t.Errorf("llama3.2-3b = %+v", p)
	}
	if p, _ := LookupPreset("llama3.2-1b"); p.Heads*p.HeadDim != p.Embedding {
		t.Errorf("llama3.2-1b heads·head_dim = %d, want 2048", p.Heads*p.HeadDim)
	}
	if _, err := LookupPreset("llama3.2-7b"); err == nil {
		t.Error("unknown preset accepted")
	}
}
