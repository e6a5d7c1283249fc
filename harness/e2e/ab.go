package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/enginebench"
	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// PromotedArm is the A/B's incumbent: the engine with its promoted
// kernels, no override.
const PromotedArm = "promoted"

// An Arm of an engine A/B: a name, the DAMASCUS_KERNELS it forces, the
// DAMASCUS_SMALL_BATCH crossover, the DAMASCUS_BATCH_CHUNK rows and the
// DAMASCUS_DEAL_RUN chunks it sets (empty: the engine's own).
type Arm struct{ Name, Kernels, SmallBatch, BatchChunk, DealRun string }

// ArmEngine is the engine name an arm's records carry: "damascus" for the
// promoted kernels, "damascus+NAME" for an arm.
func ArmEngine(arm string) string {
	if arm == PromotedArm {
		return "damascus"
	}
	return "damascus+" + arm
}

// ABOptions configure an engine A/B (RunAB).
type ABOptions struct {
	// Model as Options' (Preset, FileType and CacheDir make a synthetic one).
	Model, Preset, FileType, CacheDir string
	Protocol                          protocol.AB
	Arms                              []Arm
	Weights                           string      // Damascus' weight placement
	GateShapes                        gate.Shapes // where each arm's variants are gated first
	Note                              string
	Command                           []string
	Exe                               string // the ledger binary that runs the benches
}

// Check refuses an A/B that cannot run: no test or arm, a bad arm name, an
// override that does not parse or names a variant that is not registered
// or cannot run here.
func (o ABOptions) Check() error {
	p := o.Protocol
	if len(p.Prompts)+len(p.Gens) == 0 {
		return fmt.Errorf("no test: give prompt (--pp) or generation (--tg) lengths")
	}
	if p.Runs < 1 || p.Threads < 1 {
		return fmt.Errorf("runs %d and threads %d must be at least 1", p.Runs, p.Threads)
	}
	if len(o.Arms) == 0 {
		return fmt.Errorf("no arm: give at least one --arm NAME=op=variant,...")
	}
	seen := map[string]bool{PromotedArm: true}
	for _, a := range o.Arms {
		if a.Name == "" || strings.ContainsAny(a.Name, " ,=+/") {
			return fmt.Errorf("arm name %q: want a word without spaces, commas, =, + or /", a.Name)
		}
		if seen[a.Name] {
			return fmt.Errorf("arm %q twice (or named like the incumbent, %q)", a.Name, PromotedArm)
		}
		seen[a.Name] = true
		if a.Kernels == "" && a.SmallBatch == "" && a.BatchChunk == "" && a.DealRun == "" {
			return fmt.Errorf("arm %s changes nothing: give its kernels, its small-batch crossover, its batch chunk or its deal run", a.Name)
		}
		if a.Kernels != "" {
			if _, err := ArmKernels(a.Kernels); err != nil {
				return fmt.Errorf("arm %s: %w", a.Name, err)
			}
		}
		if a.SmallBatch != "" {
			if n, err := strconv.Atoi(a.SmallBatch); err != nil || n < 0 {
				return fmt.Errorf("arm %s: small-batch crossover %q: want a count of rows (0: off)", a.Name, a.SmallBatch)
			}
		}
		if a.BatchChunk != "" {
			if n, err := strconv.Atoi(a.BatchChunk); err != nil || n < 16 || n%16 != 0 {
				return fmt.Errorf("arm %s: batch chunk %q: want a positive multiple of 16 rows", a.Name, a.BatchChunk)
			}
		}
		if a.DealRun != "" {
			if n, err := strconv.Atoi(a.DealRun); err != nil || n < 1 {
				return fmt.Errorf("arm %s: deal run %q: want a positive count of chunks", a.Name, a.DealRun)
			}
		}
	}
	return nil
}

// ArmKernels parses an arm's overrides and checks that each names a
// registered variant that runs here.
func ArmKernels(s string) (map[string]string, error) {
	m, err := promoted.ParseOverrides(s)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("no op=variant given")
	}
	for op, name := range m {
		v, ok := ledger.Default.Lookup(op, name)
		if !ok {
			return nil, fmt.Errorf("%s:%s is not registered", op, name)
		}
		if miss := v.Missing(); len(miss) > 0 {
			return nil, fmt.Errorf("%s needs %s, absent here", v.ID(), strings.Join(miss, ", "))
		}
	}
	return m, nil
}

// RunAB gates every arm's variants, then times the promoted kernels and
// each arm in interleaved rounds, and returns the records: the run, the
// gate verdicts, then per arm and test one e2e record (engine
// ArmEngine(arm)), peak RSS included. A failed gate stops it before any
// timing.
func RunAB(ctx context.Context, o ABOptions, log io.Writer) (*record.Batch, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	path, model, err := prepareModel(Options{Model: o.Model, Preset: o.Preset, FileType: o.FileType, CacheDir: o.CacheDir}, log)
	if err != nil {
		return nil, err
	}
	run := newRunRecord(ctx, o.Command)
	b := record.NewBatch(time.Now())
	b.Add(record.Record{Kind: record.KindRun, Run: run})
	if err := gateArms(o, b, log); err != nil {
		return nil, err
	}
	p := o.Protocol
	cs := []*contender{abContender(ctx, o, path, Arm{Name: PromotedArm})}
	for _, a := range o.Arms {
		cs = append(cs, abContender(ctx, o, path, a))
	}
	var want []string
	for _, n := range p.Prompts {
		want = append(want, protocol.TestName(n, 0, 0))
	}
	for _, n := range p.Gens {
		want = append(want, protocol.TestName(0, n, 0))
	}
	pb := cli.NewProgress(log, int64(p.Runs*len(cs)), "ab", false)
	for r := range p.Runs {
		for i := range cs {
			c := cs[(i+r)%len(cs)] // rotated: each arm takes each position
			pb.Set(int64(len(cs)*r+i), fmt.Sprintf("ab round %d/%d %s", r+1, p.Runs, c.name))
			out, sp, err := c.bench(benchSpec{prompt: p.Prompts, gen: p.Gens, reps: 1, seed: 1})
			if err != nil {
				return nil, fmt.Errorf("arm %s, round %d: %w", c.name, r+1, err)
			}
			for _, test := range want {
				if len(out.tests[test]) != 1 {
					return nil, fmt.Errorf("arm %s, round %d: %d samples of %s, want 1", c.name, r+1, len(out.tests[test]), test)
				}
			}
			c.s.add(out, sp, r, c.name, log)
		}
	}
	pb.Set(int64(p.Runs*len(cs)), "ab")
	run.Note = o.Note
	run.Protocol.Model = model
	run.Protocol.AB = &p
	for i, c := range cs {
		e := protocol.Engine{Name: c.name, WeightsOnHugePages: c.s.huge, Kernels: c.s.kernels, KVCache: "f32",
			Device: c.s.device, Notes: strings.Join(c.s.placement, "; ")}
		if i > 0 {
			a := o.Arms[i-1]
			e.Overrides, e.SmallBatch, e.BatchChunk, e.DealRun = a.Kernels, a.SmallBatch, a.BatchChunk, a.DealRun
		}
		run.Protocol.Engines = append(run.Protocol.Engines, e)
	}
	for _, test := range want {
		for _, c := range cs {
			addAB(b, c.name, test, "tok/s", c.s.tests[test], "")
		}
	}
	for _, c := range cs {
		addAB(b, c.name, "peak-rss", "B", c.s.rss, "VmHWM of each bench process")
	}
	return b, nil
}

func addAB(b *record.Batch, engine, test, unit string, samples []float64, notes string) {
	if len(samples) == 0 {
		return
	}
	b.Add(record.Record{Kind: record.KindE2E, E2E: &record.E2E{Engine: engine, Test: test, Unit: unit, Samples: samples, Summary: stats.Summarize(samples), Notes: notes}})
}

// gateArms gates each arm's (op, variant) pairs at o.GateShapes, adding
// the verdicts to b; any failure is the error.
func gateArms(o ABOptions, b *record.Batch, log io.Writer) error {
	done := map[string]bool{}
	var failed []string
	for _, a := range o.Arms {
		if a.Kernels == "" {
			continue
		}
		m, _ := ArmKernels(a.Kernels)
		for _, op := range slices.Sorted(maps.Keys(m)) {
			id := op + ":" + m[op]
			if done[id] {
				continue
			}
			done[id] = true
			res, err := gate.Run(ledger.Default, gate.Options{Ops: []string{op}, Variants: []string{m[op]}, Shapes: o.GateShapes})
			if err != nil {
				return fmt.Errorf("gate of %s: %w", id, err)
			}
			pass := 0
			for i := range res {
				if res[i].Op != op {
					continue // a prefix's other ops
				}
				b.Add(record.Record{Kind: record.KindGate, Gate: &res[i]})
				if res[i].Outcome == gate.Pass {
					pass++
				} else {
					failed = append(failed, fmt.Sprintf("%s at %s: %s %s", id, res[i].Shape, res[i].Outcome, res[i].Error))
				}
			}
			fmt.Fprintf(log, "gate %s: %d shapes passed\n", id, pass)
			if pass == 0 {
				failed = append(failed, id+": no shape gated")
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("gate: %s (nothing timed)", strings.Join(failed, "; "))
	}
	return nil
}

// abContender is one arm: the Damascus bench with its overrides (the
// promoted arm clears any DAMASCUS_KERNELS of the caller's; a caller's
// DAMASCUS_SMALL_BATCH, DAMASCUS_BATCH_CHUNK or DAMASCUS_DEAL_RUN is
// refused by the command).
func abContender(ctx context.Context, o ABOptions, path string, a Arm) *contender {
	env := []string{promoted.OverrideEnv + "=" + a.Kernels}
	if a.SmallBatch != "" {
		env = append(env, promoted.SmallBatchEnv+"="+a.SmallBatch)
	}
	if a.BatchChunk != "" {
		env = append(env, promoted.BatchChunkEnv+"="+a.BatchChunk)
	}
	if a.DealRun != "" {
		env = append(env, promoted.DealRunEnv+"="+a.DealRun)
	}
	return &contender{name: ArmEngine(a.Name), s: newEngineSamples(),
		bench: func(b benchSpec) (*benchOut, *spawned, error) {
			cfg := enginebench.Config{Spec: llamabench.Spec{Model: path, Threads: o.Protocol.Threads, Prompt: b.prompt, Gen: b.gen, Reps: b.reps,
				WarmupPrompt: o.Protocol.WarmupPromptTokens, Seed: b.seed}, Weights: o.Weights}
			return benchDamascus(ctx, o.Exe, cfg, env)
		}}
}
