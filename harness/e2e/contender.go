package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/damascus-llm/damascus/harness/enginebench"
	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/protocol"
)

// A contender is one engine configuration of an end-to-end comparison.
type contender struct {
	name     string // "damascus", "llama.cpp" or "llama.cpp/VARIANT[+huge]"
	llama    bool
	external bool // an external llama-bench binary, not the pinned package
	notes    string
	rssNote  string                                       // how its peak RSS was measured, when not as the test's note says
	bench    func(benchSpec) (*benchOut, *spawned, error) // one fresh bench process
	s        *engineSamples
}

// benchSpec is what one bench process runs.
type benchSpec struct {
	prompt, gen []int
	reps        int
	noWarmup    bool
	seed        uint64
	depth       int // tokens in the cache before each test
}

// testNames are the tests b asks for, prefill then decode (ppN, tgN, at
// b's depth).
func (b benchSpec) testNames() []string {
	var names []string
	for _, n := range b.prompt {
		names = append(names, protocol.TestName(n, 0, b.depth))
	}
	for _, n := range b.gen {
		names = append(names, protocol.TestName(0, n, b.depth))
	}
	return names
}

// spec is b for either engine's bench on the model at path.
func (b benchSpec) spec(path string, o Options) llamabench.Spec {
	p := o.Protocol
	s := llamabench.Spec{Model: path, Threads: p.Threads, Prompt: b.prompt, Gen: b.gen, Reps: b.reps, NoWarmup: b.noWarmup,
		WarmupPrompt: p.WarmupPromptTokens, Seed: b.seed, Depth: b.depth}
	if b.depth > 0 {
		s.DepthThreads = p.DepthThreads
		s.DepthSnapshot = o.snapshotDir
	}
	return s
}

// benchOut is what one bench process reported.
type benchOut struct {
	tests           map[string][]float64 // test → tok/s per repetition
	huge            string
	kernels         []string
	variant, libDir string
	placement       string // Damascus: where its weights were (the engine's own account)
	// device ("cpu" or "cuda") and deviceInfo: where the engine's graph
	// ran, by its own account.
	device, deviceInfo string
	llamaBench         *protocol.LlamaBench // the external llama-bench's build
	// depth says where the process's depth cache came from (llamabench.Test.Depth).
	depth string
}

// engine results gathered over the rounds.
type engineSamples struct {
	tests   map[string][]float64 // test → tok/s per run
	rss     []float64            // peak RSS of each bench process, bytes
	cold    []float64            // seconds
	sustain []float64            // tok/s per window
	huge    string
	kernels []string
	variant string
	libDir  string
	// placement: Damascus' account of where its weights were; each
	// process's, joined when they differ (a fallback in some only).
	placement          []string
	device, deviceInfo string
	llamaBench         *protocol.LlamaBench
}

func newEngineSamples() *engineSamples { return &engineSamples{tests: map[string][]float64{}} }

// contenders are Damascus, then each llama.cpp configuration.
func contenders(ctx context.Context, o Options, path string, configs []llamaConfig) []*contender {
	cs := []*contender{damascusContender(ctx, o, path)}
	if o.LlamaBench != "" {
		return append(cs, llamaBenchContender(ctx, o, path))
	}
	for _, lc := range configs {
		cs = append(cs, llamaContender(ctx, o, path, lc))
	}
	return cs
}

func damascusContender(ctx context.Context, o Options, path string) *contender {
	return &contender{name: "damascus", s: newEngineSamples(),
		bench: func(b benchSpec) (*benchOut, *spawned, error) {
			return benchDamascus(ctx, o.Exe, damascusConfig(o, path, b), nil)
		}}
}

// benchDamascus runs one Damascus bench process of cfg (env: extra
// environment, such as an arm's DAMASCUS_KERNELS) and reads its report.
func benchDamascus(ctx context.Context, exe string, cfg enginebench.Config, env []string) (*benchOut, *spawned, error) {
	sp, err := spawn(ctx, exe, append([]string{MeasuredCommand, enginebench.Command}, cfg.Args()...), env)
	if err != nil {
		return nil, sp, fmt.Errorf("damascus bench: %w", err)
	}
	var res enginebench.Result
	if err := json.Unmarshal(sp.stdout, &res); err != nil {
		return nil, sp, fmt.Errorf("damascus bench output: %w", err)
	}
	out := &benchOut{tests: map[string][]float64{}, huge: hugeNote(res.AnonHugePagesKB, res.FileHugePagesKB), kernels: res.Kernels,
		placement: placementNote(res), device: cmp.Or(res.Config.Device, llama.DeviceCPU), deviceInfo: res.GPU}
	if out.device == llama.DeviceCUDA {
		// res.Kernels are the CPU's preferences; the GPU graph runs
		// variants/cuda's kernels, which DeviceInfo names.
		out.kernels = nil
	}
	for _, t := range res.Tests {
		out.tests[t.Name] = t.TokensPerSec
		out.depth = cmp.Or(t.Depth, out.depth)
	}
	return out, sp, nil
}

// damascusConfig is the Damascus bench of b on the model at path.
func damascusConfig(o Options, path string, b benchSpec) enginebench.Config {
	cfg := enginebench.Config{Spec: b.spec(path, o), Weights: o.Weights, KVType: o.KVType, NBatch: o.Protocol.Batch}
	if o.Device != llama.DeviceCPU {
		cfg.Device = o.Device
	}
	return cfg
}

func llamaContender(ctx context.Context, o Options, path string, lc llamaConfig) *contender {
	p := o.Protocol
	var env []string
	if lc.huge {
		env = append(env, "GLIBC_TUNABLES="+llamacpp.HugePagesTunable)
	}
	return &contender{name: lc.name, llama: true, notes: lc.notes(), s: newEngineSamples(),
		bench: func(b benchSpec) (*benchOut, *spawned, error) {
			cfg := llamacpp.BenchConfig{Spec: b.spec(path, o), Variant: lc.variant, KVType: o.LlamaKV()}
			if p.Batch > 0 {
				cfg.NUbatch, cfg.NBatch = p.Batch, max(p.Batch, 2048)
			}
			sp, err := spawn(ctx, o.Exe, append([]string{MeasuredCommand, llamacpp.BenchCommand}, cfg.Args()...), env)
			if err != nil {
				return nil, sp, fmt.Errorf("llama.cpp bench (%s): %w", lc.name, err)
			}
			var res llamacpp.BenchResult
			if err := json.Unmarshal(sp.stdout, &res); err != nil {
				return nil, sp, fmt.Errorf("llama.cpp bench output: %w", err)
			}
			out := &benchOut{tests: map[string][]float64{}, huge: hugeNote(res.AnonHugePagesKB, res.FileHugePagesKB),
				variant: res.CPUVariant, libDir: res.LlamaCpp.LibDir, device: llama.DeviceCPU}
			for _, t := range res.Tests {
				out.tests[t.Name] = t.TokensPerSec
				out.depth = cmp.Or(t.Depth, out.depth)
			}
			return out, sp, nil
		}}
}

// A llamaConfig is one way of running llama.cpp.
type llamaConfig struct {
	name, variant string
	huge          bool
}

func (c llamaConfig) notes() string {
	v := c.variant
	if v == "" {
		v = "ggml's choice of CPU variant"
	}
	if c.huge {
		return v + ", GLIBC_TUNABLES=" + llamacpp.HugePagesTunable
	}
	return v + ", GLIBC_TUNABLES unset"
}

// parseLlamaConfigs reads --llama-configs ("default,sapphirerapids+huge,
// icelake"); empty means the one configuration of --cpu-variant and
// --huge-pages, named plainly "llama.cpp".
func parseLlamaConfigs(list, variant string, huge bool) ([]llamaConfig, error) {
	if strings.TrimSpace(list) == "" {
		return []llamaConfig{{name: "llama.cpp", variant: variant, huge: huge}}, nil
	}
	var out []llamaConfig
	seen := map[string]bool{}
	for _, item := range cli.SplitList(list) {
		v, h := strings.CutSuffix(item, "+huge")
		if v == "default" {
			v = ""
		}
		if strings.ContainsAny(v, "/+ ") {
			return nil, fmt.Errorf("--llama-configs: %q is not VARIANT or VARIANT+huge", item)
		}
		name := "llama.cpp/" + item
		if seen[name] {
			return nil, fmt.Errorf("--llama-configs: %q twice", item)
		}
		seen[name] = true
		out = append(out, llamaConfig{name: name, variant: v, huge: h})
	}
	if len(out) == 1 {
		out[0].name = "llama.cpp"
	}
	return out, nil
}

// placementNote says where a Damascus bench process kept its weights.
func placementNote(res enginebench.Result) string {
	switch {
	case res.Placement == string(llama.PlaceHuge) && res.FileReleased:
		return "weights copied to anonymous huge pages (--weights huge), file map released after the copy"
	case res.Placement == string(llama.PlaceHuge):
		return "weights copied to anonymous huge pages (--weights huge)"
	case res.PlacementNotice != "":
		return "weights mmap'd from the file: --weights " + res.Config.Weights + " fell back (" + res.PlacementNotice + ")"
	}
	return "weights mmap'd from the file (--weights mmap)"
}

func hugeNote(anonKB, fileKB int64) string {
	if anonKB < 0 && fileKB < 0 {
		return "unavailable"
	}
	if anonKB <= 0 && fileKB <= 0 {
		return "no"
	}
	return fmt.Sprintf("yes: %d MiB anonymous, %d MiB file-backed on huge pages", max(anonKB, 0)>>10, max(fileKB, 0)>>10)
}
