package llama

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testmodel"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/variants/cuda"
)

// requireGPU skips where no CUDA device opens, saying why.
func requireGPU(t *testing.T) {
	t.Helper()
	if err := cuda.Available(); err != nil {
		t.Skipf("GPU tests skipped: %v", err)
	}
}

// The GPU engine's logits against the CPU engine's on the same file, over a
// float32 cache: a prefill spanning two batches (every position's logits,
// also against the float64 reference), decode steps (the recorded graph
// replayed at each new position), then the cache truncated and decoding
// resumed at an earlier position. Cosine ≥ 0.9999 and the same top-1 on
// every decisive position, each step.
func TestCUDAAgreesWithCPU(t *testing.T) {
	requireGPU(t)
	// minCos is each file's bar against the CPU engine. The tiny files'
	// kernels do the CPU's arithmetic (1.0000000 on the H200). On the
	// 3B-shaped file the synthetic model amplifies float32 reduction order:
	// on the H200 in session 10 every GPU product and activation
	// quantization matched the CPU's on the same inputs (to 7e-7,
	// TestCUDAProductsMatchCPU holds that strictly), the bisect found the
	// exact 8-token prefill at 1.0000000 and the tensor-core ones (other
	// summation orders, same integers) at 0.99989, and the CPU engine
	// itself sat 0.99993 from the float64 reference at positions 13–23
	// while the GPU sat 0.99980–0.99989: rounding, not a wrong index, scale
	// or sign, which put the cosine far below 0.999.
	for _, tc := range []struct {
		preset, typ string
		minCos      float64
	}{
		{"tiny", "Q4_K_M", 0.9999}, {"tiny", "Q8_0", 0.9999}, {"llama3.2-3b-2l", "Q4_K_M", 0.9995},
	} {
		if only := os.Getenv("DAMASCUS_CUDA_AGREE"); only != "" && only != tc.preset {
			continue
		}
		t.Run(tc.preset+"/"+tc.typ, func(t *testing.T) {
			_, m, _ := synthModel(t, tc.preset, tc.typ)
			opts := Options{NCtx: 96, NBatch: 16, Threads: 2}
			cpu, err := m.NewContext(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cpu.Close()
			opts.Device = DeviceCUDA
			gpu, err := m.NewContext(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer gpu.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			tok := func() int32 { return int32(rng.IntN(m.Config.Vocab)) }
			prompt := make([]int32, 24)
			for i := range prompt {
				prompt[i] = tok()
			}
			V := m.Config.Vocab
			var worst spread
			worst.cosine = 1
			eval := func(c *Context, what string, tokens []int32, all bool) [][]float32 {
				t.Helper()
				l, err := c.Eval(tokens, all)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				var rows [][]float32
				for j := 0; j < len(l)/V; j++ {
					rows = append(rows, slices.Clone(l[j*V:(j+1)*V]))
				}
				return rows
			}
			note := func(s spread) {
				worst.cosine, worst.maxAbs = min(worst.cosine, s.cosine), max(worst.maxAbs, s.maxAbs)
				worst.decisive, worst.misses = worst.decisive+s.decisive, worst.misses+s.misses
			}
			// ref, when given, is the float64 reference's logits at the
			// step's last position: a failure then says which engine is off.
			check := func(what string, tokens []int32, all bool, ref []float32) {
				t.Helper()
				a, b := eval(cpu, what, tokens, all), eval(gpu, what, tokens, all)
				s := compareRuns(b, a)
				if s.cosine < tc.minCos || s.misses > 0 {
					t.Errorf("%s at position %d: GPU against CPU: %v", what, gpu.Pos(), s)
					if ref != nil {
						t.Logf("  GPU against the reference %.7f, CPU against the reference %.7f",
							compareLogits(b[0], ref).cosine, compareLogits(a[0], ref).cosine)
					}
				}
				note(s)
			}
			// The prefill is also compared with the float64 reference
			// (activations rounded as the kernels' inputs), logged as context:
			// on the tiny Q4_K_M file both engines sit 0.99982 from it at the
			// same positions, so the reference's rounding model, not either
			// engine, sets that distance; the bar is the CPU engine.
			const decodes = 16
			ref, err := m.NewReference(len(prompt) + decodes)
			if err != nil {
				t.Fatal(err)
			}
			ref.RoundActivations = true
			var want [][]float32
			for _, tk := range prompt {
				l, err := ref.Eval(tk)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, slices.Clone(l))
			}
			a, b := eval(cpu, "prefill", prompt, true), eval(gpu, "prefill", prompt, true)
			gc, gr, cr := compareRuns(b, a), compareRuns(b, want), compareRuns(a, want)
			t.Logf("prefill: GPU against CPU: %v", gc)
			t.Logf("prefill: GPU against the reference: %v", gr)
			t.Logf("prefill: CPU against the reference: %v", cr)
			if gc.cosine < tc.minCos || gc.misses > 0 {
				t.Errorf("prefill: GPU against CPU: %v", gc)
				logPositions(t, m, prompt, want, b, a)
			}
			note(gc)
			for range decodes {
				tk := tok()
				l, err := ref.Eval(tk)
				if err != nil {
					t.Fatal(err)
				}
				check("decode", []int32{tk}, false, l)
			}
			for _, c := range []*Context{cpu, gpu} {
				if err := c.Truncate(10); err != nil {
					t.Fatal(err)
				}
			}
			for range 6 {
				check("decode after truncation", []int32{tok()}, false, nil)
			}
			check("prefill after decode", prompt[:5], false, nil)
			t.Logf("%s %s: %v", tc.preset, tc.typ, worst)
			if t.Failed() {
				logLayers(t, m, prompt[:12])
			}
		})
	}
}

// TestCUDAAgreesWithCPUFlashPrefill is TestCUDAAgreesWithCPU with the
// prefill attention on fattn (PrefillAttnEnv=flash): its 24-token prompt
// is two batches (16 tokens at position 0, then 8 at 16), both through it.
func TestCUDAAgreesWithCPUFlashPrefill(t *testing.T) {
	requireGPU(t)
	t.Setenv(PrefillAttnEnv, "flash")
	TestCUDAAgreesWithCPU(t)
}

// TestCUDAAgreementBisect (DAMASCUS_CUDA_BISECT=1) tells which of the 3B
// shape's dimensions moves the GPU engine away from the CPU engine: tiny
// agrees to 1.0000000, the 3B-shaped 2-layer file only to 0.99988, and
// there the CPU engine is the one at the float64 reference. Each shape
// changes one dimension of tiny's, both prefill paths, then four decodes.
func TestCUDAAgreementBisect(t *testing.T) {
	if os.Getenv("DAMASCUS_CUDA_BISECT") == "" {
		t.Skip("set DAMASCUS_CUDA_BISECT=1 (or a shape's name) to bisect the GPU engine's disagreement by shape")
	}
	requireGPU(t)
	base := synth.Preset{Name: "tiny", SizeLabel: "tiny", Embedding: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768}
	with := func(name string, f func(*synth.Preset)) synth.Preset { p := base; p.Name = name; f(&p); return p }
	shapes := []synth.Preset{
		base,
		with("hd128", func(p *synth.Preset) { p.Embedding, p.HeadDim = 512, 128 }),
		with("group3", func(p *synth.Preset) { p.Embedding, p.Heads, p.KVHeads = 768, 12, 4 }),
		with("wide3072", func(p *synth.Preset) { p.Embedding, p.Heads, p.KVHeads = 3072, 48, 24 }),
		with("ffn8192", func(p *synth.Preset) { p.FFN = 8192 }),
		with("3b-noffn", func(p *synth.Preset) { p.Embedding, p.Heads, p.KVHeads, p.HeadDim = 3072, 24, 8, 128 }),
	}
	only := os.Getenv("DAMASCUS_CUDA_BISECT") // 1: every shape, else one by name
	for _, p := range shapes {
		if only != "1" && only != p.Name {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			_, m, _ := synthPreset(t, p, "Q4_K_M")
			// Each configuration changes one thing from the engine's default:
			// the prefill kernels, programmatic dependent launch, the
			// context's length, a host copy after every layer (Capture).
			for _, cf := range []struct {
				name, mma, pdl string
				nctx           int
				capture, first bool // first: the GPU's context made before the CPU's
			}{
				{"default", "", "", 64, false, false}, {"cuda-mma-int", "int", "", 64, false, false}, {"cuda-mma", "float", "", 64, false, false}, {"mm8", "0", "", 64, false, false},
				{"no-pdl", "", "0", 64, false, false}, {"mm8 no-pdl", "0", "0", 64, false, false}, {"nctx32", "", "", 32, false, false}, {"capture", "", "", 64, true, false},
				{"gpu first", "", "", 64, false, true},
			} {
				t.Setenv(MMAEnv, cf.mma)
				t.Setenv(PDLEnv, cf.pdl)
				opts := Options{NCtx: cf.nctx, NBatch: 16, Threads: 2}
				gopts := opts
				gopts.Device = DeviceCUDA
				if cf.capture {
					gopts.Capture = func(int, int, []float32) {}
				}
				var cpu, gpu *Context
				var err error
				for _, first := range []bool{cf.first, !cf.first} {
					if first {
						gpu, err = m.NewContext(gopts)
					} else {
						cpu, err = m.NewContext(opts)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				rng := rand.New(rand.NewPCG(3, 4))
				V := m.Config.Vocab
				toks := make([]int32, 16)
				for i := range toks {
					toks[i] = int32(rng.IntN(V))
				}
				worst := func(tokens []int32, all bool) float64 {
					a, err := cpu.Eval(tokens, all)
					if err != nil {
						t.Fatal(err)
					}
					a = slices.Clone(a)
					b, err := gpu.Eval(tokens, all)
					if err != nil {
						t.Fatal(err)
					}
					w := 1.0
					for j := 0; j < len(a)/V; j++ {
						w = min(w, compareLogits(b[j*V:(j+1)*V], a[j*V:(j+1)*V]).cosine)
					}
					return w
				}
				pre := worst(toks, true)
				dec := 1.0
				for range 4 {
					dec = min(dec, worst([]int32{int32(rng.IntN(V))}, false))
				}
				t.Logf("%-9s dim %4d heads %2d/%2d hd %3d ffn %4d  %-10s prefill %.7f  decode %.7f",
					p.Name, p.Embedding, p.Heads, p.KVHeads, p.HeadDim, p.FFN, cf.name, pre, dec)
				cpu.Close()
				gpu.Close()
			}
		})
	}
}

// TestCUDAProductsMatchCPU is the strict half of the GPU engine's agreement:
// every product of a prefill and of decode steps on the 3B-shaped file is
// held to the CPU's kernel on the same quantized activations (7e-7 of the
// largest value on the H200 in session 10), and the GPU's quantization of
// each product's input to the CPU's quantizer, byte for byte.
func TestCUDAProductsMatchCPU(t *testing.T) {
	requireGPU(t)
	_, m, _ := synthModel(t, "llama3.2-3b-2l", "Q4_K_M")
	checkProducts = true
	defer func() { checkProducts = os.Getenv(CheckEnv) == "1" }()
	productCheck.Lock()
	productCheck.products, productCheck.byteDiffs, productCheck.worstRel, productCheck.worst = 0, 0, 0, ""
	productCheck.Unlock()
	c, err := m.NewContext(Options{NCtx: 32, NBatch: 8, Threads: 2, Device: DeviceCUDA})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Eval([]int32{1, 500, 9000, 70000, 128000, 3, 4, 5}, true); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []int32{6, 7, 8} {
		if _, err := c.Eval([]int32{tk}, false); err != nil {
			t.Fatal(err)
		}
	}
	productCheck.Lock()
	defer productCheck.Unlock()
	t.Logf("%d products; worst %.3g of the largest value (%s); %d activation bytes differ", productCheck.products, productCheck.worstRel, productCheck.worst, productCheck.byteDiffs)
	if productCheck.products < 2*7 {
		t.Errorf("%d products checked, want every product of 4 steps", productCheck.products)
	}
	if productCheck.byteDiffs != 0 {
		t.Errorf("%d activation bytes differ from the CPU's quantizer", productCheck.byteDiffs)
	}
	if productCheck.worstRel > 1e-5 {
		t.Errorf("a product is %.3g of its largest value from the CPU kernel's (%s), want ≤ 1e-5", productCheck.worstRel, productCheck.worst)
	}
}

// Without a usable GPU, asking for it is one clear error naming it; an
// unknown device is refused before anything is allocated.
func TestDeviceOptionErrors(t *testing.T) {
	m := openTest(t, testmodel.Options{})
	if _, err := m.NewContext(Options{NCtx: 8, Device: "tpu"}); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("Device tpu: err = %v, want one naming the device", err)
	}
	// A bad value of any of the device's variables is one error naming it.
	for _, c := range []struct{ env, bad string }{
		{MMAEnv, "pipee"},
		{DAttnEnv, "fast"},
		{LongRowUEnv, "3"},
		{MatVecEnv, "xs3"},
		{RopeFoldEnv, "yes"},
		{PrefillAttnEnv, "flsh"},
	} {
		t.Setenv(c.env, c.bad)
		if _, err := m.NewContext(Options{NCtx: 8, Device: DeviceCUDA}); err == nil || !strings.Contains(err.Error(), c.env) {
			t.Errorf("%s=%s: err = %v, want one naming the variable", c.env, c.bad, err)
		}
		t.Setenv(c.env, "")
	}
	if cuda.Available() == nil {
		t.Log("a GPU is present: the no-GPU error is not exercised here")
		return
	}
	_, err := m.NewContext(Options{NCtx: 8, Device: DeviceCUDA})
	if err == nil || !strings.Contains(err.Error(), "cuda") {
		t.Errorf("Device cuda without a GPU: err = %v, want a cuda error", err)
	}
}

// logLayers logs where the GPU and the CPU engines part from the reference
// (activations rounded as the kernels' inputs are), layer by layer.
func logLayers(t *testing.T, m *Model, tokens []int32) {
	for _, dev := range []string{DeviceCPU, DeviceCUDA} {
		d, tie, err := m.CompareLayers(tokens, Options{NCtx: 32, NBatch: 16, Threads: 2, Device: dev}, true)
		if err != nil {
			t.Errorf("%s layers: %v", dev, err)
			continue
		}
		if tie != nil {
			t.Logf("%s against the reference: compared up to the reference's rounding at %v", dev, tie)
		}
		for _, l := range d {
			t.Logf("%s against the reference: %v", dev, l)
		}
	}
}

// logPositions logs, position by position, how far the GPU's prefill (b)
// and the CPU's (a) are from the reference, and the GPU's again with the
// whole prompt in one batch and in batches of 4, to tell a position's
// arithmetic from a batch's.
func logPositions(t *testing.T, m *Model, prompt []int32, want, b, a [][]float32) {
	V := m.Config.Vocab
	runs := map[int][][]float32{}
	for _, nb := range []int{len(prompt), 4} {
		c, err := m.NewContext(Options{NCtx: 96, NBatch: nb, Device: DeviceCUDA})
		if err != nil {
			t.Error(err)
			return
		}
		l, err := c.Eval(prompt, true)
		if err != nil {
			t.Error(err)
		}
		for j := range prompt {
			runs[nb] = append(runs[nb], slices.Clone(l[j*V:(j+1)*V]))
		}
		c.Close()
	}
	for j := range prompt {
		line := fmt.Sprintf("position %2d: GPU %.7f CPU %.7f", j, compareLogits(b[j], want[j]).cosine, compareLogits(a[j], want[j]).cosine)
		for _, nb := range []int{len(prompt), 4} {
			line += fmt.Sprintf("  GPU batch %d %.7f", nb, compareLogits(runs[nb][j], want[j]).cosine)
		}
		t.Log(line)
	}
}
