// Package kernelrun runs the kernel ledger's head-to-head: for each selected
// op it gates every selected variant at every selected shape, then times the
// variants that passed everywhere against each other, shape by shape,
// interleaved. Variants that fail are recorded and never timed.
//
// Every variant is timed through its host-slice signature. For the cuda
// family that form uploads its inputs, launches and downloads, so the times
// recorded here are those of the copies, not of the kernels; the kernels'
// own times come from the device-resident benchmarks of variants/cuda.
package kernelrun

import (
	"fmt"
	"math"
	"strings"

	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/harness/timing"
	"github.com/damascus-llm/damascus/internal/pool"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
	"github.com/damascus-llm/damascus/quant"
)

// Options select and pace a run.
type Options struct {
	Ops      []string    // op names or prefixes; empty: all
	Variants []string    // variant names; empty: all
	Shapes   gate.Shapes // which shapes
	Seed     uint64
	Protocol protocol.Kernel
	// Roofline, if set, turns GB/s and GFLOP/s into fractions of this
	// machine's peaks at the protocol's thread count.
	Roofline *roofline.Report
	// Progress, if set, is told about every step.
	Progress func(Event)
}

// An Event reports progress.
type Event struct {
	Phase string // "gate" or "time"
	Op    string
	Shape string
	Done  int // steps of this phase finished
	Total int
	Gate  *gate.Result // set after a gate step
}

// Outcome is what a run found.
type Outcome struct {
	Gates   []gate.Result
	Kernels []Timing
}

// Timing is one variant timed at one shape. Its fields are those of the
// ledger's kernel record (record.Kernel), which converts it.
type Timing struct {
	Op, Variant, Family string
	Shape, Label        string // the shape's key, and with its origin
	FLOPs, Bytes        float64
	Iters               int
	NsPerOp             []float64 // raw samples, in run order
	Order               []int     // position within each interleaved run
	Summary             stats.Summary
	GFLOPS, GBps        float64 // at the median
	// Fractions of this machine's roofline at the run's thread count; 0 when
	// not probed.
	BandwidthFraction, ComputeFraction float64
	ComputePeak                        string // which probe the compute fraction refers to
}

type plan struct {
	op       *ledger.Op
	shapes   []ledger.Shape
	variants []ledger.Variant
}

// Run gates, then times.
func Run(reg *ledger.Registry, opt Options) (Outcome, error) {
	var out Outcome
	var plans []plan
	gateSteps := 0
	for _, op := range gate.Selected(opt.Ops) {
		p := plan{op: op}
		for _, v := range reg.Variants(op.Name) {
			if len(opt.Variants) == 0 || contains(opt.Variants, v.Name) {
				p.variants = append(p.variants, v)
			}
		}
		for _, s := range op.Shapes {
			if opt.Shapes.Match(s) {
				p.shapes = append(p.shapes, s)
			}
		}
		if len(p.variants) > 0 && len(p.shapes) > 0 {
			plans = append(plans, p)
			gateSteps += len(p.variants) * len(p.shapes)
		}
	}
	if len(plans) == 0 {
		return out, fmt.Errorf("kernelrun: nothing selected (ops %v, variants %v, shapes %q)", opt.Ops, opt.Variants, opt.Shapes)
	}

	// Gate everything first: a variant failing anywhere is timed nowhere.
	passed := map[string]bool{} // variant ID → passed every shape
	done := 0
	for _, p := range plans {
		for _, v := range p.variants {
			passed[v.ID()] = true
		}
		for _, s := range p.shapes {
			gs := gate.GateShape(p.op, s)
			c, err := gate.NewCase(p.op, gs, opt.Seed)
			if err != nil {
				return out, fmt.Errorf("kernelrun: %s %s: %w", p.op.Name, gs.Key(p.op.Kind), err)
			}
			for _, v := range p.variants {
				if c.Dirty() {
					if c, err = gate.NewCase(p.op, gs, opt.Seed); err != nil {
						return out, err
					}
				}
				r := gate.Result{Op: p.op.Name, Variant: v.Name, Family: string(v.Family), Shape: gs.Key(p.op.Kind)}
				if miss := v.Missing(); len(miss) > 0 {
					r.Outcome, r.Error = gate.Skip, "needs "+strings.Join(miss, ", ")
					passed[v.ID()] = false
				} else if m, err := c.Check(v); err != nil {
					r.Outcome, r.Error, r.Metrics = gate.Fail, err.Error(), m
					passed[v.ID()] = false
				} else {
					r.Outcome, r.Metrics = gate.Pass, m
				}
				out.Gates = append(out.Gates, r)
				done++
				if opt.Progress != nil {
					opt.Progress(Event{Phase: "gate", Op: p.op.Name, Shape: r.Shape, Done: done, Total: gateSteps, Gate: &r})
				}
			}
		}
	}

	// Then time the survivors, shape by shape.
	prot := opt.Protocol
	if prot.Runs == 0 {
		prot = protocol.DefaultKernel()
	}
	var pl *pool.Pool
	if prot.Threads > 1 {
		for _, p := range plans {
			if p.op.Kind != ledger.KindMatVec {
				return out, fmt.Errorf("kernelrun: %d threads split a matvec's rows; %s is timed on one thread only", prot.Threads, p.op.Name)
			}
		}
		pl = pool.New(prot.Threads)
		defer pl.Close()
	}
	timeSteps := 0
	for _, p := range plans {
		timeSteps += len(p.shapes) * len(survivors(p.variants, passed)) * prot.Runs
	}
	done = 0
	for _, p := range plans {
		vs := survivors(p.variants, passed)
		if len(vs) == 0 {
			continue
		}
		for _, s := range p.shapes {
			key := s.Key(p.op.Kind)
			w, err := workload.New(p.op, s, opt.Seed)
			if err != nil {
				return out, fmt.Errorf("kernelrun: %s %s: %w", p.op.Name, key, err)
			}
			copies := w.ColdCopies()
			cs := make([]timing.Contender, len(vs))
			for i, v := range vs {
				dst, dstb := w.NewOutput()
				var call func()
				in, err := workload.InLayout(copies, v.Layout)
				switch {
				case err != nil:
				case prot.Threads > 1:
					call, err = splitRows(p.op, w, in, v, dst, pl)
				default:
					call, err = workload.Cycle(in, v.Impl, dst, dstb)
				}
				if err != nil {
					return out, fmt.Errorf("kernelrun: %s %s %s: %w", p.op.Name, key, v.Name, err)
				}
				cs[i] = timing.Contender{Name: v.Name, Run: call}
			}
			samples, err := timing.Interleaved(cs, timing.Options{Runs: prot.Runs, MinSample: prot.MinSample, Warmup: prot.Warmup,
				Progress: func(run, _ int) {
					done++
					if opt.Progress != nil {
						opt.Progress(Event{Phase: "time", Op: p.op.Name, Shape: key, Done: done, Total: timeSteps})
					}
				}})
			if err != nil {
				return out, fmt.Errorf("kernelrun: %s %s: %w", p.op.Name, key, err)
			}
			for i, smp := range samples {
				out.Kernels = append(out.Kernels, kernelResult(p.op, s, vs[i], smp, opt.Roofline, max(prot.Threads, 1)))
			}
		}
	}
	return out, nil
}

func survivors(vs []ledger.Variant, passed map[string]bool) []ledger.Variant {
	var out []ledger.Variant
	for _, v := range vs {
		if passed[v.ID()] {
			out = append(out, v)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// splitRows is a matvec variant's timed call with the rows of each cold
// copy of w split over pl's workers in contiguous shares. The split call is
// first checked against one whole call on the same inputs, bit for bit (a
// row's sum does not depend on who computes it), so a share that misses or
// overlaps rows is an error, not a time.
func splitRows(op *ledger.Op, w *workload.Workload, copies []*workload.Workload, v ledger.Variant, dst []float32, pl *pool.Pool) (func(), error) {
	f, ok := v.Impl.(ledger.MatVec)
	if !ok {
		return nil, fmt.Errorf("not a matvec implementation (%T)", v.Impl)
	}
	rows, k := w.Shape.Rows, w.Shape.K
	rb64, err := quant.RowSize(op.Type, int64(k))
	if err != nil {
		return nil, err
	}
	// Shares start at a multiple of a weight layout's group of rows, where
	// its bytes start (copies are in the layout).
	align, span := 1, func(w []byte, lo, hi int) []byte { return w[lo*int(rb64) : hi*int(rb64)] }
	if l := v.Layout; l != nil {
		align, span = l.Rows, func(w []byte, lo, hi int) []byte { return l.Span(w, lo, hi, rows, k) }
	}
	calls := make([]func(worker, n int), len(copies))
	for i, c := range copies {
		calls[i] = func(worker, n int) {
			lo, hi := pool.Split(rows, worker, n, align)
			if lo < hi {
				f(dst[lo:hi], span(c.W, lo, hi), c.XQ, k)
			}
		}
	}
	want := make([]float32, rows)
	f(want, copies[0].W, copies[0].XQ, k)
	for i := range dst {
		dst[i] = float32(math.NaN())
	}
	pl.Run(calls[0])
	for i := range want {
		if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
			return nil, fmt.Errorf("rows split over %d workers: row %d is %g, one call gives %g", pl.Size(), i, dst[i], want[i])
		}
	}
	next := 0
	return func() {
		pl.Run(calls[next])
		if next++; next == len(calls) {
			next = 0
		}
	}, nil
}

func kernelResult(op *ledger.Op, s ledger.Shape, v ledger.Variant, smp timing.Samples, rl *roofline.Report, threads int) Timing {
	k := Timing{Op: op.Name, Variant: v.Name, Family: string(v.Family), Shape: s.Key(op.Kind), Label: s.Label(op.Kind),
		FLOPs: op.FLOPs(s), Bytes: op.Bytes(s), Iters: smp.Iters, NsPerOp: smp.NsPerOp, Order: smp.Order,
		Summary: stats.Summarize(smp.NsPerOp)}
	if med := k.Summary.Median; med > 0 {
		k.GFLOPS = k.FLOPs / med
		k.GBps = k.Bytes / med
	}
	if rl != nil {
		if bw, ok := AtThreads(*rl, roofline.ProbeMemRead, threads); ok && bw > 0 {
			k.BandwidthFraction = k.GBps * 1e9 / bw
		}
		probe := computeProbe(op)
		if peak, ok := AtThreads(*rl, probe, threads); ok && peak > 0 {
			k.ComputeFraction = k.GFLOPS * 1e9 / peak
			k.ComputePeak = fmt.Sprintf("%s (%d %s)", probe, threads, map[bool]string{false: "thread", true: "threads"}[threads > 1])
		}
	}
	return k
}

// computeProbe is the roofline probe whose peak bounds op: int8 dot products
// for the quantized types, fp32 FMA otherwise.
func computeProbe(op *ledger.Op) string {
	if (op.Kind == ledger.KindMatVec || op.Kind == ledger.KindMatMul) && op.Type.BlockSize() > 1 {
		return roofline.ProbeInt8VNNI
	}
	return roofline.ProbeFP32FMA
}

// SingleThread returns a probe's best one-thread rate per second; for memory
// it takes ordinary 4 KiB pages, which is where Go heap buffers live.
func SingleThread(r roofline.Report, probe string) (float64, bool) { return AtThreads(r, probe, 1) }

// AtThreads is SingleThread at the given thread count.
func AtThreads(r roofline.Report, probe string, threads int) (float64, bool) {
	best, ok := 0.0, false
	for _, m := range r.Measurements {
		if m.Probe != probe || m.Threads != threads || m.Skipped != "" {
			continue
		}
		if probe == roofline.ProbeMemRead && m.Pages != string(roofline.Pages4K) {
			continue
		}
		if m.PerSecond > best {
			best, ok = m.PerSecond, true
		}
	}
	return best, ok
}
