package synth_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/oracle"
	"github.com/damascus-llm/damascus/model/llama/quality"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/synth/synthtest"
	"github.com/damascus-llm/damascus/quant"
)

// llama.cpp loads the synthetic files, and the next-token distributions
// they give look like a trained model's: finite, peaked (not flat),
// changing with the context; the Q4_K_M and F16 files of one seed hold the
// same weights (up to F16 rounding), so their logits agree closely.
func TestLlamaCppLoadsSynth(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	dir := t.TempDir()
	tokens := []int32{128000, 9906, 1917, 11, 358, 1097, 264, 1296, 315, 279}
	positions := []int{0, 4, 9}
	logits := map[string][][]float32{}
	for _, typ := range []string{"Q4_K_M", "F16"} {
		path := filepath.Join(dir, typ+".gguf")
		synthtest.Write(t, synthtest.Preset(t, "tiny"), typ, 21, path)
		m, err := llamacpp.OpenModel(path, llamacpp.ModelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.NLayer != 2 || info.NEmbd != 256 || info.NVocab != 128256 {
			t.Errorf("%s: llama.cpp sees %+v", typ, info)
		}
		c, err := m.NewContext(llamacpp.ContextOptions{NCtx: 64, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Logits(tokens, positions)
		c.Close()
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		logits[typ] = out
	}
	for i, l := range logits["Q4_K_M"] {
		var sum, sq float64
		for _, v := range l {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("position %d: logit %g", positions[i], v)
			}
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		n := float64(len(l))
		std := math.Sqrt(sq/n - (sum/n)*(sum/n))
		p := quality.Probs(l)
		var pmax, entropy float64
		for _, q := range p {
			pmax = max(pmax, q)
			if q > 0 {
				entropy -= q * math.Log(q)
			}
		}
		t.Logf("position %d: logit std %.2f, top probability %.4f, entropy %.2f nats (uniform %.2f)", positions[i], std, pmax, entropy, math.Log(n))
		if std < 1 || std > 10 {
			t.Errorf("position %d: logit standard deviation %.2f, want 1..10", positions[i], std)
		}
		if pmax < 100/n || entropy > math.Log(n)-0.5 {
			t.Errorf("position %d: distribution nearly flat (top %.5f, entropy %.2f)", positions[i], pmax, entropy)
		}
		if c := correlation(l, logits["F16"][i]); c < 0.99 {
			t.Errorf("position %d: Q4_K_M and F16 logits correlate %.4f, want ≥ 0.99", positions[i], c)
		}
	}
	if correlation(logits["Q4_K_M"][1], logits["Q4_K_M"][2]) > 0.999 {
		t.Error("the distribution does not change with the context")
	}
}

func correlation(a, b []float32) float64 {
	var sa, sb, saa, sbb, sab float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		sa, sb = sa+x, sb+y
		saa, sbb, sab = saa+x*x, sbb+y*y, sab+x*y
	}
	n := float64(len(a))
	return (sab - sa*sb/n) / math.Sqrt((saa-sa*sa/n)*(sbb-sb*sb/n))
}

// llama.cpp's own quantizer, given F16 files of Llama 3.2's layer counts
// (narrow widths keep it quick; the mix depends on names, layer counts and
// row lengths), picks the type our Q4_K_M and Q4_0 files have for every
// tensor, and writes the tensors in the same order.
func TestMixMatchesLlamaCpp(t *testing.T) {
	oracle.RequireLlamaCpp(t)
	dir := t.TempDir()
	for _, layers := range []int{16, 28} {
		p := synth.Preset{Name: fmt.Sprintf("narrow-%dl", layers), SizeLabel: "test",
			Embedding: 256, Layers: layers, Heads: 4, KVHeads: 1, HeadDim: 64, FFN: 512}
		f16 := filepath.Join(dir, p.Name+"-F16.gguf")
		synthtest.Write(t, p, "F16", 1, f16)
		for _, typ := range []string{"Q4_K_M", "Q4_0"} {
			if typ == "Q4_0" && layers != 16 {
				continue // Q4_0's mix does not depend on the layer count
			}
			ours := filepath.Join(dir, p.Name+"-"+typ+".gguf")
			theirs := filepath.Join(dir, p.Name+"-llama-"+typ+".gguf")
			synthtest.Write(t, p, typ, 1, ours)
			if err := llamacpp.QuantizeModel(f16, theirs, typ, 2); err != nil {
				t.Fatal(err)
			}
			compareTypes(t, fmt.Sprintf("%d layers %s", layers, typ), ours, theirs)
		}
	}
}

// compareTypes checks that two files hold the same tensors, in the same
// order, with the same types and shapes.
func compareTypes(t *testing.T, what, ours, theirs string) {
	t.Helper()
	a := gguftest.Open(t, ours)
	b := gguftest.Open(t, theirs)
	if len(a.Tensors) != len(b.Tensors) {
		t.Fatalf("%s: %d tensors, llama.cpp %d", what, len(a.Tensors), len(b.Tensors))
	}
	q6 := 0
	for i := range a.Tensors {
		x, y := a.Tensors[i], b.Tensors[i]
		if x.Name != y.Name || x.Type != y.Type || fmt.Sprint(x.Dims) != fmt.Sprint(y.Dims) {
			t.Errorf("%s: tensor %d: ours %s %s %v, llama.cpp %s %s %v", what, i, x.Name, x.Type, x.Dims, y.Name, y.Type, y.Dims)
		}
		if y.Type == quant.Q6_K {
			q6++
		}
	}
	t.Logf("%s: %d tensors agree (%d of them Q6_K)", what, len(a.Tensors), q6)
}

// TestBigPresetAgainstLlamaCpp checks a full-size preset, named by
// DAMASCUS_SYNTH_PRESET (for example llama3.2-3b; minutes and gigabytes of
// temporary files): llama.cpp loads our Q4_K_M file and computes finite,
// peaked logits, and llama.cpp's own quantizer, given our F16 file of the
// preset, picks the same type for every tensor as our Q4_K_M file has.
func TestBigPresetAgainstLlamaCpp(t *testing.T) {
	preset := os.Getenv("DAMASCUS_SYNTH_PRESET")
	if preset == "" {
		t.Skip("set DAMASCUS_SYNTH_PRESET to a preset name to run")
	}
	oracle.RequireLlamaCpp(t)
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours-Q4_K_M.gguf")
	start := time.Now()
	synthtest.Write(t, synthtest.Preset(t, preset), "Q4_K_M", 1, ours)
	t.Logf("synth %s Q4_K_M: %s", preset, time.Since(start).Round(time.Millisecond))

	m, err := llamacpp.OpenModel(ours, llamacpp.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := m.Info()
	t.Logf("llama.cpp: %+v", info)
	c, err := m.NewContext(llamacpp.ContextOptions{NCtx: 64, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Logits([]int32{128000, 9906, 1917, 11, 358}, []int{4})
	c.Close()
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	p := quality.Probs(out[0])
	var pmax float64
	for i, q := range p {
		if math.IsNaN(q) || math.IsNaN(float64(out[0][i])) {
			t.Fatalf("logit %d is NaN", i)
		}
		pmax = max(pmax, q)
	}
	t.Logf("top probability %.4f", pmax)
	if pmax < 100/float64(len(p)) {
		t.Errorf("next-token distribution nearly flat (top %.5f)", pmax)
	}

	f16 := filepath.Join(dir, "ours-F16.gguf")
	synthtest.Write(t, synthtest.Preset(t, preset), "F16", 1, f16)
	theirs := filepath.Join(dir, "llama-Q4_K_M.gguf")
	start = time.Now()
	if err := llamacpp.QuantizeModel(f16, theirs, "Q4_K_M", 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("llama.cpp quantize F16 → Q4_K_M: %s", time.Since(start).Round(time.Millisecond))
	os.Remove(f16)
	compareTypes(t, preset+" Q4_K_M", ours, theirs)
}
