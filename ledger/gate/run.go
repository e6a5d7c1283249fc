package gate

import (
	"fmt"
	"os"
	"strings"

	"github.com/damascus-llm/damascus/ledger"
)

// Outcome of one variant at one shape.
type Outcome string

const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	Skip Outcome = "skip" // needs a feature this machine lacks
)

// A Result is the gate's verdict on one variant at one shape.
type Result struct {
	Op      string  `json:"op"`
	Variant string  `json:"variant"`
	Family  string  `json:"family"`
	Shape   string  `json:"shape"`
	Outcome Outcome `json:"outcome"`
	Error   string  `json:"error,omitempty"`
	Metrics
}

func (r Result) String() string {
	s := fmt.Sprintf("%s %s:%s shape %s", r.Outcome, r.Op, r.Variant, r.Shape)
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// Options select what Run checks. Empty fields select everything.
type Options struct {
	Ops      []string // op names or prefixes ("matvec/", "matvec/q4_k")
	Variants []string // variant names
	Families []string // variant families ("cuda")
	Shapes   Shapes
	Seed     uint64
	// Progress, if set, is called after each result.
	Progress func(done, total int, r Result)
}

// Shapes selects shapes of an op.
type Shapes string

const (
	AllShapes  Shapes = ""      // every shape
	TailShapes Shapes = "tails" // odd sizes only
	RealShapes Shapes = "real"  // real model shapes only
)

// ParseShapes reads a selection as the command line and the environment
// name it: tails, real, all, or a model name (1B, 3B), case-insensitive.
func ParseShapes(v string) (Shapes, error) {
	switch strings.ToLower(v) {
	case "tails":
		return TailShapes, nil
	case "real":
		return RealShapes, nil
	case "all":
		return AllShapes, nil
	case "1b":
		return Shapes("1B"), nil
	case "3b":
		return Shapes("3B"), nil
	}
	return "", fmt.Errorf("shapes %q: want tails, real, 1B, 3B or all", v)
}

// ShapesFromEnv is the selection the environment variable env names, read
// by ParseShapes, or def where env is unset or empty: how the conformance
// suite and the kernel benchmarks let a run widen or narrow their shapes.
func ShapesFromEnv(env string, def Shapes) (Shapes, error) {
	v := os.Getenv(env)
	if v == "" {
		return def, nil
	}
	sel, err := ParseShapes(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", env, err)
	}
	return sel, nil
}

// Match reports whether the selection includes s. Besides the constants, a
// model name ("1B", "3B") selects that model's shapes plus the tails.
func (sel Shapes) Match(s ledger.Shape) bool {
	switch sel {
	case AllShapes:
		return true
	case TailShapes:
		return !s.Real()
	case RealShapes:
		return s.Real()
	}
	return !s.Real() || strings.EqualFold(s.Model, string(sel))
}

// GateBatch caps the activation rows of real matmul shapes when gating: the
// kernels' tiling shows at 16 rows and the full prefill batch would make the
// gate minutes long. Timing uses the full shape.
const GateBatch = 16

// GateShape is the shape the gate checks for catalogue shape s.
func GateShape(op *ledger.Op, s ledger.Shape) ledger.Shape {
	if op.Kind == ledger.KindMatMul && s.Real() && s.N > GateBatch {
		s.N = GateBatch
	}
	return s
}

// Selected returns the ops of the catalogue matching names (all when empty).
func Selected(names []string) []*ledger.Op {
	var ops []*ledger.Op
	for _, op := range ledger.Catalogue() {
		if matchOp(op.Name, names) {
			ops = append(ops, op)
		}
	}
	return ops
}

func matchOp(name string, sel []string) bool {
	if len(sel) == 0 {
		return true
	}
	for _, s := range sel {
		if name == s || (strings.HasSuffix(s, "/") && strings.HasPrefix(name, s)) || strings.HasPrefix(name, s+"/") {
			return true
		}
	}
	return false
}

func matchName(name string, sel []string) bool {
	if len(sel) == 0 {
		return true
	}
	for _, s := range sel {
		if s == name {
			return true
		}
	}
	return false
}

// Run gates every selected variant of reg at every selected shape. The
// reference of each shape is computed once and shared by its variants.
func Run(reg *ledger.Registry, opts Options) ([]Result, error) {
	type job struct {
		op *ledger.Op
		s  ledger.Shape
		vs []ledger.Variant
	}
	var jobs []job
	total := 0
	for _, op := range Selected(opts.Ops) {
		var vs []ledger.Variant
		for _, v := range reg.Variants(op.Name) {
			if matchName(v.Name, opts.Variants) && matchName(string(v.Family), opts.Families) {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			continue
		}
		for _, s := range op.Shapes {
			if opts.Shapes.Match(s) {
				jobs = append(jobs, job{op, GateShape(op, s), vs})
				total += len(vs)
			}
		}
	}
	var results []Result
	for _, j := range jobs {
		key := j.s.Key(j.op.Kind)
		c, err := NewCase(j.op, j.s, opts.Seed)
		if err != nil {
			return results, fmt.Errorf("gate %s shape %s: %w", j.op.Name, key, err)
		}
		for _, v := range j.vs {
			if c.Dirty() {
				if c, err = NewCase(j.op, j.s, opts.Seed); err != nil {
					return results, fmt.Errorf("gate %s shape %s: %w", j.op.Name, key, err)
				}
			}
			r := Result{Op: j.op.Name, Variant: v.Name, Family: string(v.Family), Shape: key}
			if miss := v.Missing(); len(miss) > 0 {
				r.Outcome, r.Error = Skip, "needs "+strings.Join(miss, ", ")
			} else if m, err := c.Check(v); err != nil {
				r.Outcome, r.Error, r.Metrics = Fail, err.Error(), m
			} else {
				r.Outcome, r.Metrics = Pass, m
			}
			results = append(results, r)
			if opts.Progress != nil {
				opts.Progress(len(results), total, r)
			}
		}
	}
	return results, nil
}

// Failed returns the failures among results.
func Failed(results []Result) []Result {
	var f []Result
	for _, r := range results {
		if r.Outcome == Fail {
			f = append(f, r)
		}
	}
	return f
}

// Passed reports whether variant (op:name) passed at every shape it was run
// at in results and at least one.
func Passed(results []Result, op, name string) bool {
	n := 0
	for _, r := range results {
		if r.Op == op && r.Variant == name {
			if r.Outcome != Pass {
				return false
			}
			n++
		}
	}
	return n > 0
}
