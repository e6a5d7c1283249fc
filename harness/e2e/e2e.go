// Package e2e runs the end-to-end comparison of Damascus and llama.cpp: the
// contenders (Damascus and one or more llama.cpp configurations), each
// measured in fresh bench processes over interleaved rounds, then cold
// starts, sustained decode and the memory roofline, and the records of the
// run (with llama.cpp's row the best of its configurations per test).
// `ledger e2e` and `ledger quick` parse the flags and print what Run returns.
package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/harness/sysinfo"
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
	NoRoofline          bool   // skip the memory-bandwidth probe
	Note                string // a remark recorded with the run
	Command             []string
	// Exe is the ledger binary to spawn: it runs MeasuredCommand and the
	// two bench commands.
	Exe string
}

// LlamaKV is llama.cpp's KV cache type: LlamaKVType, else KVType (empty:
// llama.cpp's default, f16).
func (o Options) LlamaKV() string {
	if o.LlamaKVType != "" {
		return strings.ToLower(o.LlamaKVType)
	}
	return strings.ToLower(o.KVType)
}

// Run measures the comparison and returns its records: the run record
// first, then one e2e record per engine and test. Progress goes to log.
func Run(ctx context.Context, o Options, log io.Writer) (*record.Batch, error) {
	if err := o.Protocol.Validate(); err != nil {
		return nil, err
	}
	if _, err := llamacpp.LibDir(); err != nil {
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
	cs := contenders(ctx, o, path, configs)
	p := o.Protocol
	if err := interleavedRounds(cs, p, log); err != nil {
		return nil, err
	}
	pageCache, err := coldStarts(cs, path, o.ColdRuns, log)
	if err != nil {
		return nil, err
	}
	if err := sustainedDecode(cs, p, log); err != nil {
		return nil, err
	}
	if !o.NoRoofline {
		run.Roofline = probeBandwidth(p.Threads, log)
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

// probeBandwidth measures the memory roofline at the run's thread count: a
// decode step streams every weight once, so tok/s × weight bytes against
// it is the fraction of the bandwidth an engine reaches.
func probeBandwidth(threads int, log io.Writer) *roofline.Report {
	fmt.Fprintf(log, "probing memory bandwidth at %d threads...\n", threads)
	opt := roofline.Options{MemBytes: 512 << 20, Threads: []int{threads}, Repeats: 3}
	rep := roofline.Report{Date: time.Now().UTC(), MemBytes: opt.MemBytes, Repeats: opt.Repeats}
	rep.Measurements = append(roofline.MemoryRead(opt, roofline.Pages4K), roofline.MemoryRead(opt, roofline.PagesHuge)...)
	return &rep
}
