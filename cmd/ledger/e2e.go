package main

import (
	"bytes"
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
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/damascus-llm/damascus/harness/enginebench"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/harness/stats"
	"github.com/damascus-llm/damascus/harness/sysinfo"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/gguf"
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
	c, ok := commands[args[0]]
	if !ok || args[0] == measuredCommand {
		return fmt.Errorf("unknown command %q", args[0])
	}
	var out bytes.Buffer
	if err := c.run(args[1:], &out, stderr); err != nil {
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
	cpuVariant                        string
	hugePages                         bool
	jsonOut, store, note              string
}

func (f *e2eFlags) register(fs *flag.FlagSet, quick bool) {
	f.prot = protocol.DefaultE2E()
	f.coldRuns = 3
	if quick {
		// The main job's quick default: the same protocol, scaled to minutes.
		f.prot.PromptTokens, f.prot.GenTokens, f.prot.Runs, f.prot.SustainedSeconds = 128, 32, 3, 0
		f.coldRuns = 1
	}
	f.prot.Threads = runtime.NumCPU()
	if !quick {
		fs.StringVar(&f.model, "m", "", "GGUF model (default: the synthetic --preset model, made and cached under --cache)")
		fs.IntVar(&f.prot.PromptTokens, "pp", f.prot.PromptTokens, "prompt tokens of the prefill test (0: none)")
		fs.IntVar(&f.prot.GenTokens, "tg", f.prot.GenTokens, "generated tokens of the decode test (0: none)")
		fs.IntVar(&f.prot.Runs, "runs", f.prot.Runs, "timed runs per engine and test")
		fs.IntVar(&f.prot.Threads, "threads", f.prot.Threads, "threads, the same for both engines")
		fs.StringVar(&f.jsonOut, "json", "", "also write the comparison as JSON to this file")
		fs.StringVar(&f.store, "store", results.DefaultStore, "results file to append to (empty: do not record)")
		fs.StringVar(&f.note, "note", "", "a remark recorded with the run (e.g. other load on the machine)")
	}
	fs.StringVar(&f.preset, "preset", "llama3.2-1b", "synthetic model preset when no -m is given")
	fs.StringVar(&f.fileType, "type", "Q4_K_M", "synthetic model file type")
	fs.StringVar(&f.cacheDir, "cache", "cache", "directory for synthetic models")
	fs.IntVar(&f.prot.SustainedSeconds, "sustained", f.prot.SustainedSeconds, "seconds of sustained decode per engine (0: skip)")
	fs.IntVar(&f.coldRuns, "cold-runs", f.coldRuns, "cold starts per engine (model evicted from the page cache first; 0: skip)")
	fs.StringVar(&f.cpuVariant, "cpu-variant", "", "ggml CPU variant for llama.cpp, e.g. sapphirerapids (default: ggml's choice)")
	fs.BoolVar(&f.hugePages, "huge-pages", false, "run llama.cpp with GLIBC_TUNABLES="+llamacpp.HugePagesTunable)
}

func runE2E(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ef e2eFlags
	ef.register(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ledger e2e [-m MODEL] [--pp N] [--tg N] [--runs R] [--threads T] [--json FILE] [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	if err := ef.prot.Validate(); err != nil {
		fmt.Fprintln(stderr, "ledger e2e:", err)
		return errUsage
	}
	return endToEnd(append([]string{"e2e"}, args...), ef, stdout, stderr)
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
	dcfg := enginebench.Config{Model: path, Threads: p.Threads, Reps: 1, Seed: 1}
	lcfg := llamacpp.BenchConfig{Model: path, Threads: p.Threads, Reps: 1, Variant: ef.cpuVariant, Seed: 1}
	if p.PromptTokens > 0 {
		dcfg.Prompt, lcfg.Prompt = []int{p.PromptTokens}, []int{p.PromptTokens}
	}
	if p.GenTokens > 0 {
		dcfg.Gen, lcfg.Gen = []int{p.GenTokens}, []int{p.GenTokens}
	}
	var llEnv []string
	if ef.hugePages {
		llEnv = append(llEnv, "GLIBC_TUNABLES="+llamacpp.HugePagesTunable)
	}
	eng := map[string]*engineSamples{"damascus": {tests: map[string][]float64{}}, "llama.cpp": {tests: map[string][]float64{}}}
	runDamascus := func(cfg enginebench.Config) (*enginebench.Result, *spawned, error) {
		sp, err := spawn(ctx, exe, append([]string{measuredCommand, enginebench.Command}, cfg.Args()...), nil)
		if err != nil {
			return nil, sp, fmt.Errorf("damascus bench: %w", err)
		}
		var res enginebench.Result
		if err := json.Unmarshal(sp.stdout, &res); err != nil {
			return nil, sp, fmt.Errorf("damascus bench output: %w", err)
		}
		return &res, sp, nil
	}
	runLlama := func(cfg llamacpp.BenchConfig) (*llamacpp.BenchResult, *spawned, error) {
		sp, err := spawn(ctx, exe, append([]string{measuredCommand, llamacpp.BenchCommand}, cfg.Args()...), llEnv)
		if err != nil {
			return nil, sp, fmt.Errorf("llama.cpp bench: %w", err)
		}
		var res llamacpp.BenchResult
		if err := json.Unmarshal(sp.stdout, &res); err != nil {
			return nil, sp, fmt.Errorf("llama.cpp bench output: %w", err)
		}
		return &res, sp, nil
	}
	damascusRound := func() error {
		res, sp, err := runDamascus(dcfg)
		if err != nil {
			return err
		}
		e := eng["damascus"]
		for _, t := range res.Tests {
			e.tests[t.Name] = append(e.tests[t.Name], t.TokensPerSec...)
		}
		if sp.maxRSS > 0 {
			e.rss = append(e.rss, float64(sp.maxRSS))
		}
		e.kernels = res.Kernels
		e.huge = hugeNote(res.AnonHugePagesKB, res.FileHugePagesKB)
		return nil
	}
	llamaRound := func() error {
		res, sp, err := runLlama(lcfg)
		if err != nil {
			return err
		}
		e := eng["llama.cpp"]
		for _, t := range res.Tests {
			e.tests[t.Name] = append(e.tests[t.Name], t.TokensPerSec...)
		}
		if sp.maxRSS > 0 {
			e.rss = append(e.rss, float64(sp.maxRSS))
		}
		e.variant, e.libDir = res.CPUVariant, res.LlamaCpp.LibDir
		e.huge = hugeNote(res.AnonHugePagesKB, res.FileHugePagesKB)
		return nil
	}

	// Interleaved rounds: one fresh process per engine and round, the order
	// reversed every other round.
	pb := newBar(stderr, p.Runs*2, "e2e")
	for r := range p.Runs {
		order := []func() error{damascusRound, llamaRound}
		names := []string{"damascus", "llama.cpp"}
		if r%2 == 1 {
			order[0], order[1], names[0], names[1] = order[1], order[0], names[1], names[0]
		}
		for i, f := range order {
			pb.set(2*r+i, fmt.Sprintf("e2e round %d/%d %-9s %s %s", r+1, p.Runs, names[i], p.PromptTest(), p.GenTest()))
			if err := f(); err != nil {
				return err
			}
		}
	}
	pb.set(p.Runs*2, "e2e")

	// Cold starts: a fresh process loads the model evicted from the page
	// cache and evaluates one token; its whole wall time is the sample.
	pageCache := "warm: the model file stays cached between runs"
	for r := range ef.coldRuns {
		for i, name := range []string{"damascus", "llama.cpp"} {
			if r%2 == 1 {
				name = []string{"llama.cpp", "damascus"}[i]
			}
			if err := evict(path); err != nil {
				pageCache = "cold start: eviction failed (" + err.Error() + "), page cache state unknown"
			} else {
				pageCache = "tests warm; cold start after posix_fadvise(POSIX_FADV_DONTNEED) of the model file"
			}
			fmt.Fprintf(stderr, "cold start %d/%d: %s\n", r+1, ef.coldRuns, name)
			var sp *spawned
			var err error
			if name == "damascus" {
				_, sp, err = runDamascus(enginebench.Config{Model: path, Threads: p.Threads, Prompt: []int{1}, Reps: 1, NoWarmup: true, Seed: 1})
			} else {
				_, sp, err = runLlama(llamacpp.BenchConfig{Model: path, Threads: p.Threads, Prompt: []int{1}, Reps: 1, NoWarmup: true, Variant: ef.cpuVariant, Seed: 1})
			}
			if err != nil {
				return fmt.Errorf("cold start: %w", err)
			}
			eng[name].cold = append(eng[name].cold, sp.wall.Seconds())
		}
	}

	// Sustained decode: windows of about SustainedWindow seconds back to back.
	if p.SustainedSeconds > 0 && p.GenTokens > 0 {
		for _, name := range []string{"damascus", "llama.cpp"} {
			rate := stats.Summarize(eng[name].tests[p.GenTest()]).Median
			n := max(8, int(rate*float64(p.SustainedWindow)))
			windows := max(2, p.SustainedSeconds/max(p.SustainedWindow, 1))
			fmt.Fprintf(stderr, "sustained decode: %s, %d windows of tg%d\n", name, windows, n)
			var tps []float64
			if name == "damascus" {
				res, _, err := runDamascus(enginebench.Config{Model: path, Threads: p.Threads, Gen: []int{n}, Reps: windows, Seed: 2})
				if err != nil {
					return fmt.Errorf("sustained: %w", err)
				}
				tps = res.Tests[0].TokensPerSec
			} else {
				res, _, err := runLlama(llamacpp.BenchConfig{Model: path, Threads: p.Threads, Gen: []int{n}, Reps: windows, Variant: ef.cpuVariant, Seed: 2})
				if err != nil {
					return fmt.Errorf("sustained: %w", err)
				}
				tps = res.Tests[0].TokensPerSec
			}
			eng[name].sustain = tps
		}
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
	run.Protocol.LlamaCpp = &protocol.LlamaCpp{Revision: protocol.LlamaCppRevision, Package: protocol.LlamaCppPackage,
		CPUVariant: eng["llama.cpp"].variant, LibDir: eng["llama.cpp"].libDir}
	llNote := "GLIBC_TUNABLES unset"
	if ef.hugePages {
		llNote = "GLIBC_TUNABLES=" + llamacpp.HugePagesTunable
	}
	run.Protocol.Engines = []protocol.Engine{
		{Name: "damascus", WeightsOnHugePages: eng["damascus"].huge, Kernels: eng["damascus"].kernels, Notes: "weights mmap'd from the file"},
		{Name: "llama.cpp", WeightsOnHugePages: eng["llama.cpp"].huge, Notes: llNote},
	}
	b := results.NewBatch(time.Now())
	b.Add(results.Record{Kind: results.KindRun, Run: run})
	for _, name := range []string{"damascus", "llama.cpp"} {
		e := eng[name]
		add := func(test, unit string, samples []float64, notes string) *results.E2E {
			if len(samples) == 0 {
				return nil
			}
			r := &results.E2E{Engine: name, Test: test, Unit: unit, Samples: samples, Summary: stats.Summarize(samples), Notes: notes}
			b.Add(results.Record{Kind: results.KindE2E, E2E: r})
			return r
		}
		for _, test := range []string{p.PromptTest(), p.GenTest()} {
			add(test, "tok/s", e.tests[test], "")
		}
		add("cold-start", "s", e.cold, "fresh process, model evicted from the page cache, one token")
		add("peak-rss", "B", e.rss, "VmHWM of each bench process")
		if s := add("sustained", "tok/s", e.sustain, ""); s != nil {
			s.FirstWindow, s.LastWindow = e.sustain[0], e.sustain[len(e.sustain)-1]
			s.Notes = fmt.Sprintf("%d windows; first %.2f, last %.2f tok/s", len(e.sustain), s.FirstWindow, s.LastWindow)
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
	}{RunID: b.RunID, Engines: map[string]map[string]testOut{}, Ratios: map[string]float64{}}
	for _, r := range b.Recs {
		if r.Run != nil {
			out.Protocol = r.Run.Protocol
		}
		if e := r.E2E; e != nil {
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
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
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

// evict drops the file's pages from the page cache.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// describeModel hashes the model and counts its tensor types.
func describeModel(path string) (*protocol.Model, error) {
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
	g, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	for _, t := range g.Tensors {
		m.QuantMix[t.Type.String()]++
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
	tmp := path + ".tmp"
	if err := w.WriteFile(tmp); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return path, nil
}
