// Package e2e runs the end-to-end comparison of Damascus and llama.cpp: the
// contenders (Damascus and one or more llama.cpp configurations), each
// measured in fresh bench processes over interleaved rounds, then cold
// starts, sustained decode and the memory roofline, and the records of the
// run (with llama.cpp's row the best of its configurations per test).
// `ledger e2e` and `ledger quick` parse the flags and print what Run returns.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/harness/sysinfo"
	"github.com/damascus-llm/damascus/internal/filehash"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/protocol"
)

// Options configure an end-to-end comparison.
type Options struct {
	// Model is the GGUF model; empty: the synthetic Preset model of
	// FileType, made and cached under CacheDir.
	Model, Preset, FileType, CacheDir string
	Protocol                          protocol.E2E
	ColdRuns                          int // cold starts per engine (0: none)
	// CPUVariant and HugePages are the one llama.cpp configuration when
	// LlamaConfigs is empty ("default,sapphirerapids+huge,...": several,
	// llama.cpp's row the best of them per test).
	CPUVariant   string
	HugePages    bool
	LlamaConfigs string
	Weights      string // Damascus' weight placement (llama.ParsePlacement)
	// KVType is both engines' KV cache type (empty: each engine's own);
	// LlamaKVType is llama.cpp's when it differs.
	KVType, LlamaKVType string
	NoRoofline          bool // skip the memory-bandwidth probe
	// Device is where Damascus's graph runs: "cpu" ("" too) or "cuda".
	Device string
	// LlamaBench, when set, is an external llama-bench binary that stands
	// for llama.cpp (a CUDA build, say) instead of the pinned package;
	// LlamaNGL is its -ngl (-1: 99 with Device cuda, else llama-bench's
	// default) and LlamaSource the operator's account of its build.
	LlamaBench  string
	LlamaNGL    int
	LlamaSource string
	Note        string // a remark recorded with the run
	Command     []string
	// Exe is the ledger binary to spawn: it runs MeasuredCommand and the
	// two bench commands.
	Exe string
	// snapshotDir holds the engines' depth snapshots during Run
	// (Protocol.DepthSnapshot): a temporary directory, removed after.
	snapshotDir string
}

// LlamaKV is llama.cpp's KV cache type: LlamaKVType, else KVType (empty:
// llama.cpp's default, f16).
func (o Options) LlamaKV() string {
	if o.LlamaKVType != "" {
		return strings.ToLower(o.LlamaKVType)
	}
	return strings.ToLower(o.KVType)
}

// Check refuses options that cannot run or would not compare like with
// like, before anything is measured.
func (o Options) Check() error {
	if err := o.Protocol.Validate(); err != nil {
		return err
	}
	switch o.Device {
	case "", llama.DeviceCPU, llama.DeviceCUDA:
	default:
		return fmt.Errorf("--device %q: want cpu or cuda", o.Device)
	}
	if o.LlamaBench == "" {
		switch {
		case o.Device == llama.DeviceCUDA:
			// The pinned package is a CPU build: a GPU Damascus beside it
			// would be a comparison of devices, not engines.
			return errors.New("--device cuda needs --llama-bench (a CUDA build of llama-bench): the pinned llama.cpp package runs on the CPU only")
		case o.LlamaNGL >= 0:
			return errors.New("--llama-ngl needs --llama-bench")
		case o.LlamaSource != "":
			return errors.New("--llama-source needs --llama-bench")
		}
		return nil
	}
	switch {
	case o.LlamaConfigs != "" || o.CPUVariant != "" || o.HugePages:
		return errors.New("--llama-bench runs one external llama-bench: --llama-configs, --cpu-variant and --huge-pages configure the pinned package's libraries")
	case o.Protocol.WarmupPromptTokens > 0:
		// llama-bench has no such flag: the engines would warm up unalike.
		return errors.New("--warmup-prompt: llama-bench always warms up on the whole prompt, so it cannot be shortened for both engines")
	case o.Protocol.DepthThreads > 0:
		return errors.New("--depth-threads: llama-bench fills its depth on its -t threads, so both engines could not fill alike")
	case o.Protocol.DepthSnapshot:
		return errors.New("--depth-snapshot: llama-bench fills its depth in every process and keeps no snapshot")
	}
	return checkLlamaBench(o.LlamaBench)
}

// recordedProtocol is o's protocol as it runs and is recorded: one
// repetition per round (the --reps default) is RepsPerRound 0, so that the
// record of such a run is byte for byte what it was before the field.
func (o Options) recordedProtocol() protocol.E2E {
	p := o.Protocol
	if p.RepsPerRound == 1 {
		p.RepsPerRound = 0
	}
	p.RoundProbe = o.probes() && p.GenTokens > 0 && p.Depth == 0
	return p
}

// llamaNGL is llama-bench's -ngl; -1 leaves it out.
func (o Options) llamaNGL() int {
	if o.LlamaNGL < 0 && o.Device == llama.DeviceCUDA {
		return 99 // every layer on the GPU
	}
	return o.LlamaNGL
}

// Run measures the comparison and returns its records: the run record
// first, then one e2e record per engine and test. Progress goes to log.
func Run(ctx context.Context, o Options, log io.Writer) (*record.Batch, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	var benchSum string
	if o.LlamaBench != "" {
		var err error
		if benchSum, _, err = filehash.SHA256(o.LlamaBench); err != nil {
			return nil, fmt.Errorf("--llama-bench: %w", err)
		}
	} else if _, err := llamacpp.LibDir(); err != nil {
		return nil, fmt.Errorf("the pinned llama.cpp is not installed (make baseline): %w", err)
	}
	path, model, err := prepareModel(o, log)
	if err != nil {
		return nil, err
	}
	run := newRunRecord(ctx, o.Command) // machine facts and sensors before the runs
	configs, err := parseLlamaConfigs(o.LlamaConfigs, o.CPUVariant, o.HugePages)
	if err != nil {
		return nil, err
	}
	if o.Protocol.DepthSnapshot {
		// The cache of a long depth is gigabytes a snapshot (a 3B's f16
		// cache at 16384: 1.8 GiB per engine): $TMPDIR picks the disk.
		if o.snapshotDir, err = os.MkdirTemp("", "damascus-depth-"); err != nil {
			return nil, fmt.Errorf("--depth-snapshot: %w", err)
		}
		defer os.RemoveAll(o.snapshotDir)
		fmt.Fprintf(log, "depth snapshots in %s (removed after the run)\n", o.snapshotDir)
	}
	cs := contenders(ctx, o, path, configs)
	p := o.recordedProtocol()
	// With per-round probes, one before the first round and one after
	// each: round r lies between probes r and r+1.
	var rounds []roofline.Measurement
	afterRound := func() {}
	if p.RoundProbe {
		afterRound = func() { rounds = append(rounds, roundProbe(p.Threads, log)) }
		afterRound()
	}
	if err := interleavedRounds(cs, p, log, afterRound); err != nil {
		return nil, err
	}
	pageCache, err := coldStarts(cs, path, o.ColdRuns, log)
	if err != nil {
		return nil, err
	}
	if err := sustainedDecode(cs, p, log); err != nil {
		return nil, err
	}
	// The probe reads host memory: beside a GPU's decode its fractions
	// would mislead (NominalGBps states the device's instead).
	if o.probes() {
		run.Roofline = probeRoofline(p, log)
		run.Roofline.Rounds = rounds
	}
	run.Note = o.Note
	run.Protocol.Model = model
	run.Protocol.E2E = &p
	run.Protocol.PageCache = pageCache
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	after := sysinfo.Gather(sctx).Sensors
	cancel()
	run.Protocol.SensorsAfter = &after
	run.Protocol.Engines, run.Protocol.LlamaCpp = engineRecords(o, cs)
	if lb := run.Protocol.LlamaCpp.Bench; lb != nil {
		lb.SHA256 = benchSum
	}
	return records(run, cs), nil
}

// prepareModel returns the model's path (making the synthetic one if none
// is given) and its description.
func prepareModel(o Options, log io.Writer) (string, *protocol.Model, error) {
	path := o.Model
	if path == "" {
		var err error
		if path, err = syntheticModel(o.Preset, o.FileType, o.CacheDir, log); err != nil {
			return "", nil, err
		}
	}
	fmt.Fprintf(log, "model %s: hashing...\n", path)
	model, err := describeModel(path)
	if err != nil {
		return "", nil, err
	}
	return path, model, nil
}

// newRunRecord describes this invocation: command line, machine, protocol.
func newRunRecord(ctx context.Context, cmdline []string) *record.Run {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p := protocol.Record{Date: time.Now().UTC(), Machine: sysinfo.Gather(ctx)}
	return &record.Run{Command: "ledger " + strings.Join(cmdline, " "), Protocol: p}
}

// probes reports whether the run probes the memory bandwidth: unless
// --no-roofline, and not beside a GPU's decode.
func (o Options) probes() bool { return !o.NoRoofline && o.Device != llama.DeviceCUDA }

// roundProbe reads the huge-page probe buffer after a round
// (protocol.E2E.RoundProbe): 512 MiB, two repeats of each sweep.
func roundProbe(threads int, log io.Writer) roofline.Measurement {
	m := roofline.MemoryRead(roofline.Options{MemBytes: 512 << 20, Threads: []int{threads}, Repeats: 2}, roofline.PagesHuge)[0]
	if m.Skipped != "" {
		fmt.Fprintf(log, "round probe: skipped: %s\n", m.Skipped)
	} else {
		fmt.Fprintf(log, "round probe: %.1f GB/s (huge pages, %s)\n", m.Best, m.Sweep)
	}
	return m
}

// probeRoofline measures the roofline at the run's thread count: the
// memory bandwidth (a decode step streams every weight once, so tok/s ×
// weight bytes against it is the fraction of the bandwidth an engine
// reaches) and, with a prefill test, the int8 peaks of VNNI and AMX (a
// prompt token takes 2 × LayerWeights int8 operations through the weight
// matrices; issue 19 reports prefill as a fraction of them).
func probeRoofline(p protocol.E2E, log io.Writer) *roofline.Report {
	fmt.Fprintf(log, "probing memory bandwidth at %d threads...\n", p.Threads)
	opt := roofline.Options{MemBytes: 512 << 20, Threads: []int{p.Threads}, Repeats: 3}
	rep := roofline.Report{Date: time.Now().UTC(), MemBytes: opt.MemBytes, Repeats: opt.Repeats}
	rep.Measurements = append(roofline.MemoryRead(opt, roofline.Pages4K), roofline.MemoryRead(opt, roofline.PagesHuge)...)
	if p.PromptTokens > 0 {
		fmt.Fprintf(log, "probing int8 peaks at %d threads...\n", p.Threads)
		rep.Measurements = append(rep.Measurements, roofline.Int8VNNI(opt)...)
		rep.Measurements = append(rep.Measurements, roofline.AMXInt8(opt)...)
	}
	return &rep
}
