package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/damascus-llm/damascus/harness/enginebench"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/harness/stats"
	"github.com/damascus-llm/damascus/harness/sysinfo"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/gguf"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/tokenizer/llama3vocab"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/results"
)

func init() {
	register(command{name: "e2e", summary: "end to end: Damascus beside llama.cpp (ppN, tgN, cold start, peak RSS, sustained)", run: runE2E})
	register(command{name: enginebench.Command, summary: "benchmark the Damascus engine like llama-bench (JSON on stdout)", run: enginebench.Main})
	register(command{name: measuredCommand, summary: "run a ledger command, then print its JSON output with this process's peak RSS (used by e2e)", run: runMeasured})
}

// measuredCommand wraps a bench so its peak RSS is measured from inside the
// process: the kernel's rusage of a child also counts the parent's memory
// at fork time (exec inherits the high-water mark), so ru_maxrss of a
// spawned bench would report the ledger's own size. VmHWM after exec is the
// new program's alone.
const measuredCommand = "measured"

type measuredOutput struct {
	PeakRSSBytes int64           `json:"peak_rss_bytes"` // VmHWM; -1 when unreadable
	Output       json.RawMessage `json:"output"`
}

func runMeasured(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: ledger measured COMMAND [ARGS]")
		return errUsage
	}
	c, ok := commands.Lookup(args[0])
	if !ok || args[0] == measuredCommand {
		return fmt.Errorf("unknown command %q", args[0])
	}
	var out bytes.Buffer
	if err := c.Run(args[1:], &out, stderr); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	if !json.Valid(out.Bytes()) {
		return fmt.Errorf("%s did not print JSON", args[0])
	}
	return json.NewEncoder(stdout).Encode(measuredOutput{PeakRSSBytes: vmHWM(), Output: out.Bytes()})
}

// vmHWM reads this process's peak resident set size from /proc/self/status.
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// e2eFlags configure an end-to-end comparison.
type e2eFlags struct {
	model, preset, fileType, cacheDir string
	prot                              protocol.E2E
	coldRuns                          int
	cpuVariant, llamaConfigs          string
	weights                           string // Damascus' weight placement
	hugePages, noRoofline             bool
	jsonOut, store, note              string
	kvType, llamaKVType               string
}

func (f *e2eFlags) register(fs *flag.FlagSet, quick bool) {
	f.prot = protocol.DefaultE2E()
	f.coldRuns = 3
	llamaConfigs := ""
	if quick {
		// The main job's quick default: the same protocol, scaled to minutes.
		// 128 generated tokens and 5 rounds: with 32 tokens and 3 rounds the
		// per-round decode ratio spread 0.55-2.16x on a fresh machine.
		// llama.cpp is measured as ggml picks its CPU variant, with and
		// without its weights on huge pages, and its row is the better of
		// the two per test: its best configuration here, not its default.
		f.prot.PromptTokens, f.prot.GenTokens, f.prot.Runs, f.prot.SustainedSeconds = 128, 128, 5, 0
		f.coldRuns = 1
		llamaConfigs = "default,default+huge"
	}
	f.prot.Threads = runtime.NumCPU()
	if !quick {
		fs.StringVar(&f.model, "m", "", "GGUF model (default: the synthetic --preset model, made and cached under --cache)")
		u := cli.Unbounded
		cli.IntVar(fs, &f.prot.PromptTokens, "pp", f.prot.PromptTokens, 0, u, "prompt tokens of the prefill test (0: none)")
		cli.IntVar(fs, &f.prot.GenTokens, "tg", f.prot.GenTokens, 0, u, "generated tokens of the decode test (0: none)")
		cli.IntVar(fs, &f.prot.Runs, "runs", f.prot.Runs, 1, u, "timed runs per engine and test")
		cli.IntVar(fs, &f.prot.Depth, "depth", 0, 0, u, "tokens in the KV cache before each prefill and decode test, both engines (llama-bench's -d; 0: none); cold starts and sustained decode start empty")
		cli.IntVar(fs, &f.prot.WarmupPromptTokens, "warmup-prompt", 0, 0, u, "tokens of the prefill test's untimed warmup in each process, both engines (0: the whole prompt, as llama-bench)")
		cli.ThreadsVar(fs, &f.prot.Threads, "threads", f.prot.Threads, "threads, the same for both engines")
		fs.StringVar(&f.jsonOut, "json", "", "also write the comparison as JSON to this file")
		fs.StringVar(&f.store, "store", results.DefaultStore, "results file to append to (empty: do not record)")
		fs.StringVar(&f.note, "note", "", "a remark recorded with the run (e.g. other load on the machine)")
	}
	fs.StringVar(&f.preset, "preset", "llama3.2-1b", "synthetic model preset when no -m is given")
	fs.StringVar(&f.fileType, "type", "Q4_K_M", "synthetic model file type")
	fs.StringVar(&f.cacheDir, "cache", "cache", "directory for synthetic models")
	cli.IntVar(fs, &f.prot.SustainedSeconds, "sustained", f.prot.SustainedSeconds, 0, cli.Unbounded, "seconds of sustained decode per engine (0: skip)")
	cli.IntVar(fs, &f.coldRuns, "cold-runs", f.coldRuns, 0, cli.Unbounded, "cold starts per engine (model evicted from the page cache first; 0: skip)")
	fs.StringVar(&f.cpuVariant, "cpu-variant", "", "ggml CPU variant for llama.cpp, e.g. sapphirerapids (default: ggml's choice)")
	fs.BoolVar(&f.hugePages, "huge-pages", false, "run llama.cpp with GLIBC_TUNABLES="+llamacpp.HugePagesTunable)
	fs.StringVar(&f.weights, "weights", string(llama.DefaultPlacement), "where Damascus keeps its weights: huge (copied to anonymous huge pages, the file map released; mmap, with a notice, where huge pages are unavailable) or mmap (in place in the file map)")
	if !quick { // quick shares the kernel ledger's --no-roofline
		fs.BoolVar(&f.noRoofline, "no-roofline", false, "skip the memory-bandwidth probe (no fraction of bandwidth)")
	}
	fs.StringVar(&f.kvType, "kv-type", "", "KV cache type of both engines: f32, f16 or bf16 (default: each engine's own, f32 for Damascus and f16 for llama.cpp)")
	fs.StringVar(&f.llamaKVType, "llama-kv-type", "", "llama.cpp's KV cache type when it should differ from --kv-type (f32, f16 or bf16)")
	fs.StringVar(&f.llamaConfigs, "llama-configs", llamaConfigs, "several llama.cpp configurations, e.g. default,sapphirerapids+huge,icelake: each is measured, and llama.cpp's row takes the best per test")
}

// llamaKV is llama.cpp's KV cache type: --llama-kv-type, else --kv-type
// (empty: llama.cpp's default, f16).
func (f *e2eFlags) llamaKV() string {
	if f.llamaKVType != "" {
		return strings.ToLower(f.llamaKVType)
	}
	return strings.ToLower(f.kvType)
}

func runE2E(args []string, stdout, stderr io.Writer) error {
	fs := cli.Flags("e2e", "usage: ledger e2e [-m MODEL] [--pp N] [--tg N] [--runs R] [--threads T] [--json FILE] [flags]", stderr)
	var ef e2eFlags
	ef.register(fs, false)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	if err := ef.prot.Validate(); err != nil {
		fmt.Fprintln(stderr, "ledger e2e:", err)
		return errUsage
	}
	for _, kv := range []string{ef.kvType, ef.llamaKVType} {
		if _, err := enginebench.ParseKVType(kv); err != nil {
			fmt.Fprintln(stderr, "ledger e2e: KV cache type:", err)
			return errUsage
		}
	}
	if ef.jsonOut != "" {
		// Before minutes of measuring: a device, FIFO or the model is refused.
		if _, err := outfile.Check(ef.jsonOut, ef.model, ef.store); err != nil {
			return err
		}
	}
	return endToEnd(append([]string{"e2e"}, args...), ef, stdout, stderr)
}

// A contender is one engine configuration of an end-to-end comparison.
type contender struct {
	name  string // "damascus", "llama.cpp" or "llama.cpp/VARIANT[+huge]"
	llama bool
	notes string
	bench func(benchSpec) (*benchOut, *spawned, error) // one fresh bench process
	s     *engineSamples
}

// benchSpec is what one bench process runs.
type benchSpec struct {
	prompt, gen []int
	reps        int
	noWarmup    bool
	seed        uint64
	depth       int // tokens in the cache before each test
}

// benchOut is what one bench process reported.
type benchOut struct {
	tests           map[string][]float64 // test → tok/s per repetition
	huge            string
	kernels         []string
	variant, libDir string
	placement       string // Damascus: where its weights were (the engine's own account)
}

func newEngineSamples() *engineSamples { return &engineSamples{tests: map[string][]float64{}} }

// alternate returns cs, reversed on odd rounds.
func alternate(cs []*contender, round int) []*contender {
	if round%2 == 0 {
		return cs
	}
	out := make([]*contender, len(cs))
	for i, c := range cs {
		out[len(cs)-1-i] = c
	}
	return out
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
	for _, item := range splitList(list) {
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
	placement []string
}

func endToEnd(cmdline []string, ef e2eFlags, stdout, stderr io.Writer) error {
	if err := ef.prot.Validate(); err != nil {
		return err
	}
	if _, err := llamacpp.LibDir(); err != nil {
		return fmt.Errorf("the pinned llama.cpp is not installed (make baseline): %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the ledger binary to spawn: %w", err)
	}
	path := ef.model
	if path == "" {
		if path, err = syntheticModel(ef.preset, ef.fileType, ef.cacheDir, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "model %s: hashing...\n", path)
	model, err := describeModel(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	p := ef.prot
	run := runRecord(cmdline, nil) // machine facts and sensors before the runs
	var llamaConfigs []llamaConfig
	if llamaConfigs, err = parseLlamaConfigs(ef.llamaConfigs, ef.cpuVariant, ef.hugePages); err != nil {
		return err
	}
	var prompt, gen []int
	if p.PromptTokens > 0 {
		prompt = []int{p.PromptTokens}
	}
	if p.GenTokens > 0 {
		gen = []int{p.GenTokens}
	}
	cs := []*contender{{name: "damascus", s: newEngineSamples(),
		bench: func(b benchSpec) (*benchOut, *spawned, error) {
			cfg := enginebench.Config{Model: path, Threads: p.Threads, Prompt: b.prompt, Gen: b.gen, Reps: b.reps, NoWarmup: b.noWarmup, WarmupPrompt: p.WarmupPromptTokens, Seed: b.seed, Weights: ef.weights, KVType: ef.kvType, Depth: b.depth}
			sp, err := spawn(ctx, exe, append([]string{measuredCommand, enginebench.Command}, cfg.Args()...), nil)
			if err != nil {
				return nil, sp, fmt.Errorf("damascus bench: %w", err)
			}
			var res enginebench.Result
			if err := json.Unmarshal(sp.stdout, &res); err != nil {
				return nil, sp, fmt.Errorf("damascus bench output: %w", err)
			}
			out := &benchOut{tests: map[string][]float64{}, huge: hugeNote(res.AnonHugePagesKB, res.FileHugePagesKB), kernels: res.Kernels,
				placement: placementNote(res)}
			for _, t := range res.Tests {
				out.tests[t.Name] = t.TokensPerSec
			}
			return out, sp, nil
		}}}
	for _, lc := range llamaConfigs {
		var env []string
		if lc.huge {
			env = append(env, "GLIBC_TUNABLES="+llamacpp.HugePagesTunable)
		}
		cs = append(cs, &contender{name: lc.name, llama: true, notes: lc.notes(), s: newEngineSamples(),
			bench: func(b benchSpec) (*benchOut, *spawned, error) {
				cfg := llamacpp.BenchConfig{Model: path, Threads: p.Threads, Prompt: b.prompt, Gen: b.gen, Reps: b.reps, NoWarmup: b.noWarmup, WarmupPrompt: p.WarmupPromptTokens, Variant: lc.variant, Seed: b.seed, KVType: ef.llamaKV(), Depth: b.depth}
				sp, err := spawn(ctx, exe, append([]string{measuredCommand, llamacpp.BenchCommand}, cfg.Args()...), env)
				if err != nil {
					return nil, sp, fmt.Errorf("llama.cpp bench (%s): %w", lc.name, err)
				}
				var res llamacpp.BenchResult
				if err := json.Unmarshal(sp.stdout, &res); err != nil {
					return nil, sp, fmt.Errorf("llama.cpp bench output: %w", err)
				}
				out := &benchOut{tests: map[string][]float64{}, huge: hugeNote(res.AnonHugePagesKB, res.FileHugePagesKB),
					variant: res.CPUVariant, libDir: res.LlamaCpp.LibDir}
				for _, t := range res.Tests {
					out.tests[t.Name] = t.TokensPerSec
				}
				return out, sp, nil
			}})
	}

	// Interleaved rounds: one fresh process per engine and round, the order
	// reversed every other round.
	pb := newBar(stderr, p.Runs*len(cs), "e2e")
	for r := range p.Runs {
		for i, c := range alternate(cs, r) {
			pb.set(len(cs)*r+i, fmt.Sprintf("e2e round %d/%d %-12s %s %s", r+1, p.Runs, c.name, p.PromptTest(), p.GenTest()))
			out, sp, err := c.bench(benchSpec{prompt: prompt, gen: gen, reps: 1, seed: 1, depth: p.Depth})
			if err != nil {
				return err
			}
			for test, tps := range out.tests {
				c.s.tests[test] = append(c.s.tests[test], tps...)
				// Each sample is also logged as it comes, so that a run cut
				// short (a time limit, a crash) still leaves its raw data.
				fmt.Fprintf(stderr, "sample round %d %s %s: %v tok/s\n", r+1, c.name, test, tps)
			}
			if sp.maxRSS > 0 {
				c.s.rss = append(c.s.rss, float64(sp.maxRSS))
			}
			c.s.huge, c.s.kernels, c.s.variant, c.s.libDir = out.huge, out.kernels, out.variant, out.libDir
			if out.placement != "" && !slices.Contains(c.s.placement, out.placement) {
				c.s.placement = append(c.s.placement, out.placement)
			}
		}
	}
	pb.set(p.Runs*len(cs), "e2e")

	// Cold starts: a fresh process loads the model evicted from the page
	// cache and evaluates one token; its whole wall time is the sample.
	pageCache := "warm: the model file stays cached between runs"
	for r := range ef.coldRuns {
		for _, c := range alternate(cs, r) {
			if err := evict(path); err != nil {
				pageCache = "cold start: eviction failed (" + err.Error() + "), page cache state unknown"
			} else {
				pageCache = "tests warm; cold start after posix_fadvise(POSIX_FADV_DONTNEED) of the model file"
			}
			fmt.Fprintf(stderr, "cold start %d/%d: %s\n", r+1, ef.coldRuns, c.name)
			_, sp, err := c.bench(benchSpec{prompt: []int{1}, reps: 1, noWarmup: true, seed: 1})
			if err != nil {
				return fmt.Errorf("cold start: %w", err)
			}
			c.s.cold = append(c.s.cold, sp.wall.Seconds())
		}
	}

	// Sustained decode: windows of about SustainedWindow seconds back to
	// back, each engine alone on the machine.
	if p.SustainedSeconds > 0 && p.GenTokens > 0 {
		for _, c := range cs {
			rate := stats.Summarize(c.s.tests[p.GenTest()]).Median
			n := max(8, int(rate*float64(p.SustainedWindow)))
			windows := max(2, p.SustainedSeconds/max(p.SustainedWindow, 1))
			fmt.Fprintf(stderr, "sustained decode: %s, %d windows of tg%d\n", c.name, windows, n)
			out, _, err := c.bench(benchSpec{gen: []int{n}, reps: windows, seed: 2})
			if err != nil {
				return fmt.Errorf("sustained: %w", err)
			}
			c.s.sustain = out.tests[fmt.Sprintf("tg%d", n)]
		}
	}

	// The memory roofline at the run's thread count: a decode step streams
	// every weight once, so tok/s × weight bytes against it is the fraction
	// of the bandwidth an engine reaches.
	if !ef.noRoofline {
		fmt.Fprintf(stderr, "probing memory bandwidth at %d threads...\n", p.Threads)
		opt := roofline.Options{MemBytes: 512 << 20, Threads: []int{p.Threads}, Repeats: 3}
		rep := roofline.Report{Date: time.Now().UTC(), MemBytes: opt.MemBytes, Repeats: opt.Repeats}
		rep.Measurements = append(roofline.MemoryRead(opt, roofline.Pages4K), roofline.MemoryRead(opt, roofline.PagesHuge)...)
		run.Roofline = &rep
	}

	// Records.
	run.Note = ef.note
	run.Protocol.Model = model
	run.Protocol.E2E = &p
	run.Protocol.PageCache = pageCache
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	after := sysinfo.Gather(sctx).Sensors
	cancel()
	run.Protocol.SensorsAfter = &after
	var variants, libDir []string
	for _, c := range cs {
		e := protocol.Engine{Name: c.name, WeightsOnHugePages: c.s.huge, Kernels: c.s.kernels, Notes: c.notes}
		if !c.llama {
			e.KVCache = cmp.Or(strings.ToLower(ef.kvType), "f32")
			e.Notes = strings.Join(c.s.placement, "; ")
		} else {
			e.KVCache = cmp.Or(ef.llamaKV(), "f16")
			variants = append(variants, c.s.variant)
			libDir = append(libDir, c.s.libDir)
		}
		run.Protocol.Engines = append(run.Protocol.Engines, e)
	}
	run.Protocol.LlamaCpp = &protocol.LlamaCpp{Revision: protocol.LlamaCppRevision, Package: protocol.LlamaCppPackage,
		CPUVariant: strings.Join(variants, ", "), LibDir: libDir[0]}
	b := results.NewBatch(time.Now())
	b.Add(results.Record{Kind: results.KindRun, Run: run})
	tests := []struct {
		name, unit, notes string
		lower             bool
		samples           func(*engineSamples) []float64
	}{
		{p.PromptTest(), "tok/s", "", false, func(s *engineSamples) []float64 { return s.tests[p.PromptTest()] }},
		{p.GenTest(), "tok/s", "", false, func(s *engineSamples) []float64 { return s.tests[p.GenTest()] }},
		{"cold-start", "s", "fresh process, model evicted from the page cache, one token", true, func(s *engineSamples) []float64 { return s.cold }},
		{"peak-rss", "B", "VmHWM of each bench process", true, func(s *engineSamples) []float64 { return s.rss }},
		{"sustained", "tok/s", "", false, func(s *engineSamples) []float64 { return s.sustain }},
	}
	record := func(engine string, t int, samples []float64, notes string) {
		if len(samples) == 0 {
			return
		}
		tt := tests[t]
		r := &results.E2E{Engine: engine, Test: tt.name, Unit: tt.unit, Samples: samples, Summary: stats.Summarize(samples), Notes: notes}
		// At a depth a decode step streams the KV cache too, in each
		// engine's cache type: the weights alone no longer say the traffic.
		if tt.name == p.GenTest() && run.Roofline != nil && p.Depth == 0 {
			r.Notes = joinNote(r.Notes, bandwidthNote(r.Summary.Median, model.TensorBytes, *run.Roofline))
		}
		if tt.name == "sustained" {
			r.FirstWindow, r.LastWindow = samples[0], samples[len(samples)-1]
			r.Notes = strings.TrimPrefix(notes+"; ", "; ") + fmt.Sprintf("%d windows; first %.2f, last %.2f tok/s", len(samples), r.FirstWindow, r.LastWindow)
		}
		b.Add(results.Record{Kind: results.KindE2E, E2E: r})
	}
	for t, tt := range tests {
		for _, c := range cs {
			record(c.name, t, tt.samples(c.s), tt.notes)
		}
		// With several llama.cpp configurations, "llama.cpp" is the best of
		// them at each test: the rival at its strongest.
		if len(llamaConfigs) > 1 {
			var best *contender
			for _, c := range cs[1:] {
				m := stats.Summarize(tt.samples(c.s)).Median
				if len(tt.samples(c.s)) == 0 {
					continue
				}
				if bm := 0.0; best != nil {
					bm = stats.Summarize(tt.samples(best.s)).Median
					if (tt.lower && m >= bm) || (!tt.lower && m <= bm) {
						continue
					}
				}
				best = c
			}
			if best != nil {
				record("llama.cpp", t, tt.samples(best.s), strings.TrimPrefix(tt.notes+"; ", "; ")+"best of "+strconv.Itoa(len(llamaConfigs))+" configurations: "+best.name)
			}
		}
	}
	if p.SustainedSeconds == 0 {
		fmt.Fprintln(stdout, "(sustained decode skipped: --sustained 0)")
	}
	fmt.Fprintln(stdout, results.BaselineTable(b.Recs).Render())
	if ef.jsonOut != "" {
		if err := writeE2EJSON(ef.jsonOut, b); err != nil {
			return err
		}
	}
	if ef.store != "" {
		if err := results.Append(ef.store, b.Recs...); err != nil {
			return err
		}
		bench := filepath.Join(filepath.Dir(ef.store), "bench", b.RunID+".txt")
		if err := writeBenchFile(bench, b.Recs); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "recorded run %s in %s; benchstat file %s\n", b.RunID, ef.store, bench)
	}
	return nil
}

// bandwidthNote states the weight stream a decode rate implies and its
// fraction of the probed bandwidth (4 KiB and huge pages).
func bandwidthNote(tokPerSec float64, weightBytes int64, r roofline.Report) string {
	gbps := tokPerSec * float64(weightBytes) / 1e9
	note := fmt.Sprintf("≈ %.1f GB/s of weights", gbps)
	for _, m := range r.Measurements {
		if m.Skipped == "" && m.PerSecond > 0 {
			note += fmt.Sprintf(", %.0f%% of %.1f GB/s (%s pages)", 100*gbps*1e9/m.PerSecond, m.PerSecond/1e9, m.Pages)
		}
	}
	return note
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
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

// writeE2EJSON writes, per engine and test, the samples, median and p95,
// and the Damascus/llama.cpp ratios of the medians.
func writeE2EJSON(path string, b *results.Batch) error {
	type testOut struct {
		Unit    string    `json:"unit"`
		Samples []float64 `json:"samples"`
		Median  float64   `json:"median"`
		P95     float64   `json:"p95"`
		Stddev  float64   `json:"stddev"`
		Notes   string    `json:"notes,omitempty"`
	}
	out := struct {
		RunID    string                        `json:"run_id"`
		Protocol protocol.Record               `json:"protocol"`
		Engines  map[string]map[string]testOut `json:"engines"`
		Ratios   map[string]float64            `json:"ratios"` // damascus median / llama.cpp median
		// Per-round damascus/llama.cpp ratios, sorted (rounds interleave
		// the engines, so sample i of each is round i).
		PairedRatios map[string][]float64 `json:"paired_ratios,omitempty"`
	}{RunID: b.RunID, Engines: map[string]map[string]testOut{}, Ratios: map[string]float64{}, PairedRatios: map[string][]float64{}}
	recs := map[string]map[string]*results.E2E{} // test → engine → record
	for _, r := range b.Recs {
		if r.Run != nil {
			out.Protocol = r.Run.Protocol
		}
		if e := r.E2E; e != nil {
			if recs[e.Test] == nil {
				recs[e.Test] = map[string]*results.E2E{}
			}
			recs[e.Test][e.Engine] = e
			if out.Engines[e.Engine] == nil {
				out.Engines[e.Engine] = map[string]testOut{}
			}
			out.Engines[e.Engine][e.Test] = testOut{Unit: e.Unit, Samples: e.Samples, Median: e.Summary.Median,
				P95: e.Summary.P95, Stddev: e.Summary.Stddev, Notes: e.Notes}
		}
	}
	for test, d := range out.Engines["damascus"] {
		if l, ok := out.Engines["llama.cpp"][test]; ok && l.Median != 0 {
			out.Ratios[test] = d.Median / l.Median
		}
		if r := results.PairedRatios(recs[test]["damascus"], recs[test]["llama.cpp"]); r != nil {
			out.PairedRatios[test] = r
		}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, append(data, '\n'))
}

// spawned is a finished child process.
type spawned struct {
	stdout []byte
	wall   time.Duration
	maxRSS int64 // bytes, from inside the child (measured); -1 when unknown
}

// spawn runs exe with args (and extra environment) to completion.
func spawn(ctx context.Context, exe string, args, env []string) (*spawned, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	sp := &spawned{stdout: stdout.Bytes(), wall: time.Since(start), maxRSS: -1}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return sp, fmt.Errorf("%s %s: %w: %s", filepath.Base(exe), strings.Join(args[:min(2, len(args))], " "), err, msg)
	}
	if len(args) > 0 && args[0] == measuredCommand {
		var m measuredOutput
		if err := json.Unmarshal(sp.stdout, &m); err != nil {
			return sp, fmt.Errorf("reading %s output: %w", measuredCommand, err)
		}
		sp.stdout, sp.maxRSS = m.Output, m.PeakRSSBytes
	}
	return sp, nil
}

// describeModel hashes the model and counts its tensor types.
func describeModel(path string) (*protocol.Model, error) {
	g, err := gguf.Open(path) // first: it refuses a FIFO, which os.Open would block on
	if err != nil {
		return nil, err
	}
	defer g.Close()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("hashing %s: %w", path, err)
	}
	m := &protocol.Model{Path: path, SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n, QuantMix: map[string]int{}}
	for _, t := range g.Tensors {
		m.QuantMix[t.Type.String()]++
		m.TensorBytes += int64(t.Size)
	}
	if name, err := g.String("general.name"); err == nil {
		m.Name = name
	}
	if ft, err := g.Uint32("general.file_type"); err == nil {
		m.FileType = fileTypeName(ft)
	}
	return m, nil
}

func fileTypeName(id uint32) string {
	for _, name := range ftype.Names() {
		if ft, err := ftype.Parse(name); err == nil && uint32(ft.ID) == id {
			return name
		}
	}
	return fmt.Sprintf("file type %d", id)
}

// syntheticModel returns the cached synthetic model of preset and type,
// making it first if needed.
func syntheticModel(preset, typ, dir string, stderr io.Writer) (string, error) {
	p, err := synth.LookupPreset(preset)
	if err != nil {
		return "", err
	}
	ft, err := ftype.Parse(typ)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("synth-%s-%s-seed1.gguf", p.Name, strings.ToLower(typ)))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	vocab, err := llama3vocab.Load()
	if err != nil {
		return "", fmt.Errorf("the synthetic model needs the Llama 3 tokenizer: %w", err)
	}
	fmt.Fprintf(stderr, "tokenizer: %s\n", vocab.Source)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var written atomic.Int64
	var pb atomic.Pointer[bar]
	w, total, err := synth.Build(synth.Options{Preset: p, Type: ft, Seed: 1, Tokenizer: vocab.Metadata(),
		Workers: runtime.NumCPU(), Progress: func(n int64) {
			if b := pb.Load(); b != nil {
				b.set(int(written.Add(n)>>20), "")
			}
		}})
	if err != nil {
		return "", err
	}
	pb.Store(newBar(stderr, int(total>>20), fmt.Sprintf("making %s (MiB)", filepath.Base(path))))
	if err := w.WriteFile(path); err != nil { // complete or absent, never partial
		return "", err
	}
	return path, nil
}
