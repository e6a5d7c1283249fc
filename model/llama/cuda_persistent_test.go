package llama

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The persistent decode kernel (DecodeEnv) against the launch-per-op graph,
// on the GPU: the same file, the same prompt (prefilled by the same batch
// kernels), then decode steps, each step's logits compared. The kernel does
// the same arithmetic operation for operation (variants/cuda persistent.cu
// says how), so every step's logits must be the same bits; the test fails
// on any difference, and logs the cosine and the largest difference so that
// a failure says whether it is a rounding or a wrong result. The cache the
// kernel writes is read by the later steps, so a wrong key or value shows
// up there. Each mode: one launch for all layers, one a layer, with the L2
// prefetch, the megakernel (mega.cu: the same arithmetic, the weights
// streamed through a ring in shared memory) with the largest ring and with
// the smallest (three of its largest rounds: the ring wraps often); the
// 3B-shaped file also decodes past position 1024, where a split of the
// attention spans more than one 32-position tile. The graph runs the
// serial decode attention (DAttnEnv), whose sums the kernels' attention
// does in the same order (the default, fold, sums in others).
func TestPersistentDecodeAgrees(t *testing.T) {
	requireGPU(t)
	t.Setenv(DAttnEnv, "serial")
	for _, tc := range decodeCases {
		t.Run(tc.preset+"/"+tc.typ, func(t *testing.T) {
			_, m, _ := synthModel(t, tc.preset, tc.typ)
			nctx, prompt := tc.size()
			tokens := randomTokens(rand.New(rand.NewPCG(3, 4)), prompt+24, m.Config.Vocab)
			logged := map[string]bool{} // kernels whose resources are logged
			run := func(mode string) [][]float32 {
				t.Helper()
				t.Setenv(DecodeEnv, mode)
				c, err := m.NewContext(Options{NCtx: nctx, NBatch: 512, Device: DeviceCUDA})
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				defer c.Close()
				kernel, _, _ := strings.Cut(mode, ",")
				if b, ok := c.b.(*cudaBackend); ok && b.pers != nil && !logged[kernel] {
					fi, arch := b.pers.k.Resources()
					t.Logf("%s (%s): %d blocks × 256 threads, %d registers, %d local bytes, %d static + %d dynamic shared bytes (ring %d)",
						mode, arch, b.pers.k.Blocks(), fi.Registers, fi.LocalBytes, fi.StaticShared, b.pers.k.Shared(), b.pers.k.Ring())
					logged[kernel] = true
				}
				var out [][]float32
				l, err := c.Eval(tokens[:prompt], false)
				if err != nil {
					t.Fatalf("%s: prefill: %v", mode, err)
				}
				out = append(out, slices.Clone(l))
				for i, tk := range tokens[prompt:] {
					if i == 16 { // back to an earlier position: the cache's later rows are stale and must be overwritten
						if err := c.Truncate(prompt + 4); err != nil {
							t.Fatal(err)
						}
					}
					start := time.Now()
					l, err := c.Eval([]int32{tk}, false)
					if err != nil {
						t.Fatalf("%s: decode at position %d: %v", mode, c.Pos(), err)
					}
					if d := time.Since(start); d > 5*time.Second {
						t.Fatalf("%s: a decode step took %v (a barrier waited out its watchdog?)", mode, d)
					}
					out = append(out, slices.Clone(l))
				}
				return out
			}
			want := run("")
			for _, mode := range []string{"persistent,timeout=2000", "persistent-layer,timeout=2000", "persistent,prefetch,timeout=2000",
				"mega,timeout=2000", "mega,ring=1,timeout=2000"} {
				got := run(mode)
				identical := 0
				for i := range want {
					s := compareLogits(got[i], want[i])
					same := slices.Equal(got[i], want[i])
					if same {
						identical++
					}
					if !same || !s.top1Agree || math.IsNaN(s.cosine) {
						what := "decode step"
						if i == 0 {
							what = "prefill (no persistent kernel: the paths must agree here)"
						}
						t.Errorf("%s: %s %d: not the launch-per-op path's bits: cosine %.9f, max |Δ| %.3g, top-1 agrees %v",
							mode, what, i, s.cosine, s.maxAbs, s.top1Agree)
					}
				}
				t.Logf("%s: %d of %d steps bit-identical to the launch-per-op graph", mode, identical, len(want))
			}
		})
	}
}

// A barrier that one block never reaches ends the step in about the
// watchdog's timeout with an error naming the barrier, instead of hanging
// the device; a fresh context decodes normally afterwards.
func TestPersistentWatchdog(t *testing.T) {
	requireGPU(t)
	for _, kind := range []string{"persistent", "mega"} {
		t.Run(kind, func(t *testing.T) { testWatchdog(t, kind) })
	}
}

func testWatchdog(t *testing.T, kind string) {
	_, m, _ := synthModel(t, "tiny", "Q4_K_M")
	t.Setenv(DecodeEnv, kind+",watchdog-test,timeout=200")
	c, err := m.NewContext(Options{NCtx: 32, NBatch: 8, Device: DeviceCUDA})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Eval([]int32{1, 2, 3}, false); err != nil {
		t.Fatal(err) // a batch: not the persistent kernel
	}
	start := time.Now()
	_, err = c.Eval([]int32{4}, false)
	d := time.Since(start)
	// The barrier named is not 0: arrivals are counted, not named, so block
	// 0's arrival at barrier 1 completes the others' barrier 0 and the
	// grid runs out of step until a later barrier waits out the timeout
	// (on the H200 in session 10: barrier 10, after 200.75 ms).
	if err == nil || !strings.Contains(err.Error(), "grid barrier") || !strings.Contains(err.Error(), "waited past") {
		t.Errorf("decode with a missing block: err = %v, want the watchdog's error naming a grid barrier", err)
	}
	if d > 5*time.Second {
		t.Errorf("the failing step took %v, want about the 200 ms timeout", d)
	}
	t.Logf("watchdog: %v after %v", err, d)
	t.Setenv(DecodeEnv, kind+",timeout=2000")
	c2, err := m.NewContext(Options{NCtx: 32, NBatch: 8, Device: DeviceCUDA})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for _, tk := range []int32{1, 2, 3, 4} {
		if _, err := c2.Eval([]int32{tk}, false); err != nil {
			t.Fatalf("after the watchdog's test: %v", err)
		}
	}
}

// DecodeEnv's values parse, and bad ones are one clear error (no GPU needed).
func TestDecodeEnvParses(t *testing.T) {
	for _, v := range []string{"", "graph", "persistent", "persistent-layer", "persistent,prefetch,blocks=66,timeout=500", "mega", "mega,ring=65536,timeout=500"} {
		if _, _, err := decodeConfig(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	sh, perLayer, _ := decodeConfig("persistent-layer,prefetch,blocks=66")
	if sh == nil || !perLayer || !sh.Prefetch || sh.Blocks != 66 {
		t.Errorf("persistent-layer,prefetch,blocks=66: %+v, per layer %v", sh, perLayer)
	}
	if sh, _, _ := decodeConfig("mega,ring=65536"); sh == nil || !sh.Mega || sh.Ring != 65536 {
		t.Errorf("mega,ring=65536: %+v", sh)
	}
	for _, v := range []string{"fast", "graph,prefetch", "persistent,blocks=0", "persistent,turbo", "persistent,ring=65536", "mega,ring=0"} {
		if _, _, err := decodeConfig(v); err == nil || !strings.Contains(err.Error(), DecodeEnv) {
			t.Errorf("%q: err = %v, want one naming %s", v, err, DecodeEnv)
		}
	}
}

// Where a persistent or mega layer's time goes, on the GPU: block 0's
// marks at the end of each step and barrier (DecodeEnv's timing), over
// decode steps of the 3B-shaped file after a 256-token prompt, averaged
// and logged a phase a line. The marks must rise through every layer; the
// durations are for reading, not asserted. DAMASCUS_PHASE_KINDS (values of
// DecodeEnv joined by ";", e.g. "persistent,blocks=264") replaces the two
// kinds, to time a grid or a register budget (DAMASCUS_CUDA_DEFINES).
func TestPersistentPhaseTimes(t *testing.T) {
	requireGPU(t)
	_, m, _ := synthModel(t, "llama3.2-3b-2l", "Q4_K_M")
	names := []string{"norm+QKV", "barrier", "attention", "barrier", "combine", "barrier", "O", "barrier", "norm+gate/up", "barrier", "down"}
	prompt := make([]int32, 256)
	for i := range prompt {
		prompt[i] = int32(i % m.Config.Vocab)
	}
	kinds := []string{"persistent", "mega"}
	if v := os.Getenv("DAMASCUS_PHASE_KINDS"); v != "" {
		kinds = strings.Split(v, ";")
	}
	for _, kind := range kinds {
		t.Setenv(DecodeEnv, kind+",timing,timeout=2000")
		c, err := m.NewContext(Options{NCtx: 512, NBatch: 512, Device: DeviceCUDA})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Eval(prompt, false); err != nil {
			t.Fatal(err)
		}
		b := c.b.(*cudaBackend)
		sum := make([]float64, len(names))
		// The steps' prologues (persistent.cu's marks 12-15; 0 where a
		// kernel has none): from the mark that starts the step.
		pro := []struct {
			name     string
			from, at int
		}{{"norm+quantize (of norm+QKV)", 0, 12}, {"xqa copy (of O)", 6, 13}, {"norm+quantize (of norm+gate/up)", 8, 14}, {"h quantize (of down)", 10, 15}}
		proSum, proN := make([]float64, len(pro)), make([]int, len(pro))
		steps := 0
		for i := range 8 {
			if _, err := c.Eval([]int32{int32(i + 1)}, false); err != nil {
				t.Fatal(err)
			}
			times, err := b.phaseTimes()
			if err != nil {
				t.Fatal(err)
			}
			if len(times) < 16*m.Config.Layers {
				t.Fatalf("%s: %d marks for %d layers", kind, len(times), m.Config.Layers)
			}
			for l := range m.Config.Layers {
				mk := times[l*16 : l*16+len(names)+1]
				for j := 1; j < len(mk); j++ {
					if mk[j] < mk[j-1] || mk[j] == 0 {
						t.Fatalf("%s step %d layer %d: marks not rising: %v", kind, i, l, mk)
					}
					sum[j-1] += float64(mk[j] - mk[j-1])
				}
				for j, p := range pro {
					if at := times[l*16+p.at]; at != 0 {
						proSum[j] += float64(at - times[l*16+p.from])
						proN[j]++
					}
				}
				steps++
			}
		}
		c.Close()
		total := 0.0
		for j, n := range names {
			t.Logf("%s %-13s %7.2f µs", kind, n, sum[j]/float64(steps)/1e3)
			total += sum[j]
		}
		t.Logf("%s a layer      %7.2f µs (block 0, %d layer steps)", kind, total/float64(steps)/1e3, steps)
		for j, p := range pro {
			if proN[j] > 0 {
				t.Logf("%s   prologue %-32s %7.2f µs", kind, p.name, proSum[j]/float64(proN[j])/1e3)
			}
		}
	}
}
