package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/kernelrun"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/protocol"
)

func init() {
	commands.Define("run", "gated head-to-head of variants, timed interleaved (kernel ledger)", "usage: ledger run [--op OPS] [--variant NAMES] [--shapes 1B|3B|real|tails|all] [--runs N] [--store FILE]", runKernels)
}

// defaultRunOps are the ops `ledger run` times unless told otherwise: every
// op but matmul, whose naive variant needs minutes per call at the real
// shapes (time it explicitly, e.g. --op matmul/q4_k --variant matvec-loop,amx-int8),
// and batched attention (naive about half a second per call; time it with
// --op attention_batch --variant per-token,avx512).
var defaultRunOps = func() string {
	var ops []string
	for _, op := range ledger.Catalogue() {
		if op.Kind != ledger.KindMatMul && op.Kind != ledger.KindAttentionBatch {
			ops = append(ops, op.Name)
		}
	}
	return strings.Join(ops, ",")
}()

// kernelFlags are the flags of the timed kernel ledger, shared by run and quick.
type kernelFlags struct {
	sel        selection
	runs       int
	minSample  time.Duration
	warmup     time.Duration
	store      string
	noRoofline bool
	note       string
	threads    int
}

func (k *kernelFlags) register(fs *flag.FlagSet, defOps string) {
	k.sel.register(fs, defOps, "1B")
	def := protocol.DefaultKernel()
	fs.IntVar(&k.runs, "runs", def.Runs, "interleaved timed runs per variant and shape")
	fs.DurationVar(&k.minSample, "min-sample", def.MinSample, "minimum duration of one timed sample")
	fs.DurationVar(&k.warmup, "warmup", def.Warmup, "untimed warmup per variant and shape")
	registerRecording(fs, &k.store, &k.note)
	fs.BoolVar(&k.noRoofline, "no-roofline", false, "skip the roofline probe (no fractions of peak)")
	fs.IntVar(&k.threads, "threads", def.Threads, "workers a matvec call's rows are split over, as a decode step splits them (matvec ops only; 1: single-threaded)")
}

// registerRecording declares --store and --note, how run and e2e record a
// run (quick shares run's).
func registerRecording(fs *flag.FlagSet, store, note *string) {
	fs.StringVar(store, "store", record.DefaultStore, "results store to append to: a folder of month files or one .jsonl file (empty: do not record)")
	fs.StringVar(note, "note", "", "a remark recorded with the run (e.g. other load on the machine)")
}

func runKernels(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var kf kernelFlags
	kf.register(fs, defaultRunOps)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	_, err := kernelLedger(append([]string{"run"}, args...), kf, stdout, stderr)
	return err
}

// kernelLedger probes the roofline, gates and times, prints the tables and
// records everything. It returns the batch of records.
func kernelLedger(cmdline []string, kf kernelFlags, stdout, stderr io.Writer) (*record.Batch, error) {
	ops, variants, shapes, err := kf.sel.parse()
	if err != nil {
		fmt.Fprintln(stderr, "ledger:", err)
		return nil, errUsage
	}
	if kf.runs < 1 || kf.minSample <= 0 {
		fmt.Fprintln(stderr, "ledger: --runs must be ≥ 1 and --min-sample > 0")
		return nil, errUsage
	}
	if kf.threads < 1 {
		fmt.Fprintln(stderr, "ledger: --threads must be ≥ 1")
		return nil, errUsage
	}
	if kf.threads > 1 {
		for _, op := range gate.Selected(ops) {
			if op.Kind != ledger.KindMatVec {
				fmt.Fprintf(stderr, "ledger: --threads %d splits a matvec's rows; %s is timed on one thread (select matvec ops with --op)\n", kf.threads, op.Name)
				return nil, errUsage
			}
		}
	}
	prot := protocol.Kernel{Runs: kf.runs, MinSample: kf.minSample, Warmup: kf.warmup, Threads: kf.threads, ColdWeightBytes: workload.ColdBytes}
	run := runRecord(cmdline, &prot)
	run.Note = kf.note
	if !kf.noRoofline {
		fmt.Fprintf(stderr, "probing the roofline at %d thread(s) (memory read, fp32 FMA, int8 VNNI)...\n", kf.threads)
		rep := quickRoofline(kf.threads)
		run.Roofline = &rep
	}
	out, err := kernelrun.Run(ledger.Default, kernelrun.Options{Ops: ops, Variants: variants, Shapes: shapes, Seed: kf.sel.seed,
		Protocol: prot, Roofline: run.Roofline, Progress: progress(stderr)})
	if err != nil {
		return nil, err
	}
	b := record.NewBatch(time.Now())
	b.Add(record.Record{Kind: record.KindRun, Run: run})
	for i := range out.Gates {
		b.Add(record.Record{Kind: record.KindGate, Gate: &out.Gates[i]})
	}
	for _, t := range out.Kernels {
		b.Add(record.Record{Kind: record.KindKernel, Kernel: record.KernelOf(t)})
	}
	fmt.Fprintln(stdout, record.KernelTable(b.Recs).Render())
	if fails := gate.Failed(out.Gates); len(fails) > 0 {
		fmt.Fprintf(stdout, "\n%d gate failure(s), those variants were not timed:\n", len(fails))
		for _, f := range fails {
			fmt.Fprintf(stdout, "  %s:%s at %s: %s\n", f.Op, f.Variant, f.Shape, f.Error)
		}
	}
	if kf.store != "" {
		bench, err := recordRun(kf.store, b)
		if err != nil {
			return b, err
		}
		fmt.Fprintf(stdout, "\nrecorded run %s in %s; benchstat file %s\n", b.RunID, kf.store, bench)
	}
	return b, nil
}

// recordRun appends a run's records to store and writes their benchstat
// file under the store's home (run and e2e record the same way); it returns
// that file's path.
func recordRun(store string, b *record.Batch) (bench string, err error) {
	if err := record.Append(store, b.Recs...); err != nil {
		return "", err
	}
	bench = filepath.Join(record.Home(store), "bench", b.RunID+".txt")
	if err := writeBenchFile(bench, b.Recs); err != nil {
		return "", err
	}
	return bench, nil
}

// quickRoofline probes the peaks at one thread and at threads, small enough
// to take seconds.
func quickRoofline(threads int) roofline.Report {
	ts := []int{1}
	if threads > 1 {
		ts = append(ts, threads)
	}
	opt := roofline.Options{MemBytes: 256 << 20, Threads: ts, Repeats: 3, ComputeTime: 50 * time.Millisecond}
	r := roofline.Report{Date: time.Now().UTC(), MemBytes: opt.MemBytes, Repeats: opt.Repeats}
	r.Measurements = append(r.Measurements, roofline.MemoryRead(opt, roofline.Pages4K)...)
	r.Measurements = append(r.Measurements, roofline.FP32FMA(opt)...)
	r.Measurements = append(r.Measurements, roofline.Int8VNNI(opt)...)
	return r
}

func writeBenchFile(path string, recs []record.Record) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return outfile.Write(path, func(w io.Writer) error { return record.WriteBench(w, recs) })
}
