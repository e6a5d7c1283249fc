package llama

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testmodel"
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
	for _, tc := range []struct{ preset, typ string }{
		{"tiny", "Q4_K_M"}, {"tiny", "Q8_0"}, {"llama3.2-3b-2l", "Q4_K_M"},
	} {
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
			check := func(what string, tokens []int32, all bool) {
				t.Helper()
				a, b := eval(cpu, what, tokens, all), eval(gpu, what, tokens, all)
				s := compareRuns(b, a)
				if s.cosine < 0.9999 || s.misses > 0 {
					t.Errorf("%s at position %d: GPU against CPU: %v", what, gpu.Pos(), s)
				}
				note(s)
			}
			// The prefill is held to the float64 reference too (activations
			// rounded as the kernels' inputs): the GPU must be within
			// 0.99999 of it, and within 0.9999 of the CPU unless the CPU's
			// kernels are themselves the farther from the reference (the AMX
			// batch kernels round in their own order).
			ref, err := m.NewReference(len(prompt))
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
			if gr.cosine < 0.99999 || gr.misses > 0 {
				t.Errorf("prefill: GPU against the reference: %v", gr)
			}
			if (gc.cosine < 0.9999 || gc.misses > 0) && !(cr.cosine < gr.cosine) {
				t.Errorf("prefill: GPU against CPU: %v, and the CPU is the nearer to the reference", gc)
			}
			note(gc)
			for range 16 {
				check("decode", []int32{tok()}, false)
			}
			for _, c := range []*Context{cpu, gpu} {
				if err := c.Truncate(10); err != nil {
					t.Fatal(err)
				}
			}
			for range 6 {
				check("decode after truncation", []int32{tok()}, false)
			}
			check("prefill after decode", prompt[:5], false)
			t.Logf("%s %s: %v", tc.preset, tc.typ, worst)
			if t.Failed() {
				logLayers(t, m, prompt[:12])
			}
		})
	}
}

// Without a usable GPU, asking for it is one clear error naming it; an
// unknown device is refused before anything is allocated.
func TestDeviceOptionErrors(t *testing.T) {
	m := openTest(t, testmodel.Options{})
	if _, err := m.NewContext(Options{NCtx: 8, Device: "tpu"}); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("Device tpu: err = %v, want one naming the device", err)
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
		d, err := m.CompareLayers(tokens, Options{NCtx: 32, NBatch: 16, Threads: 2, Device: dev}, true)
		if err != nil {
			t.Errorf("%s layers: %v", dev, err)
			continue
		}
		for _, l := range d {
			t.Logf("%s against the reference: %v", dev, l)
		}
	}
}
