// Package promoted is how the engine reaches kernels: for each op it returns
// the first variant of the committed preference list (preferences.json,
// written by `ledger promote`) that is registered, whose CPU features are
// present and that computes at the op's own precision, else the op's naive
// variant.
//
// Bundles (kernels of one weight layout promoted together on an engine
// A/B) come before the lists. The environment variable DAMASCUS_KERNELS overrides the choice for
// experiments, e.g. DAMASCUS_KERNELS=matvec/q4_k=avx2,rmsnorm=naive; naming a
// variant that is missing or cannot run here is an error, never a silent
// fallback.
package promoted

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"

	_ "github.com/damascus-llm/damascus/variants/amx"
	_ "github.com/damascus-llm/damascus/variants/avx2"
	_ "github.com/damascus-llm/damascus/variants/avx512"
	_ "github.com/damascus-llm/damascus/variants/cuda"
	_ "github.com/damascus-llm/damascus/variants/gounrolled"
	_ "github.com/damascus-llm/damascus/variants/naive"
	_ "github.com/damascus-llm/damascus/variants/neon"
	// Every variant family registers itself here.
)

// OverrideEnv names the environment variable that forces variants.
const OverrideEnv = "DAMASCUS_KERNELS"

// A Dispatcher resolves ops to variants from a preference list, a registry
// and overrides. The package functions use one built from the embedded
// preferences, the default registry and $DAMASCUS_KERNELS.
type Dispatcher struct {
	prefs     Preferences
	reg       *ledger.Registry
	overrides map[string]string
	cpu       string // this processor's CPUKey, for entries limited to a vendor or family

	mu     sync.Mutex
	chosen map[string]string // op → variant ID (or description), for records
}

// NewDispatcher builds a dispatcher. overrides maps op names to variant names.
func NewDispatcher(prefs Preferences, reg *ledger.Registry, overrides map[string]string) *Dispatcher {
	id, _ := cpufeat.CPUIdentity()
	return &Dispatcher{prefs: prefs, reg: reg, overrides: overrides, cpu: CPUKey(id.Vendor, id.Family), chosen: map[string]string{}}
}

// ParseOverrides parses "op=variant,op=variant".
func ParseOverrides(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, part := range cli.SplitList(s) {
		op, name, ok := strings.Cut(part, "=")
		if !ok || op == "" || name == "" {
			return nil, fmt.Errorf("%s: %q is not op=variant", OverrideEnv, part)
		}
		m[op] = name
	}
	return m, nil
}

// Resolve returns the variant the engine should use for op.
func (d *Dispatcher) Resolve(op string) (ledger.Variant, error) { return d.resolveAt(op, "") }

// resolveAt returns op's variant of precision p: the override when it names
// a variant of that precision (at the op's own precision, "", any override:
// forcing a reduced-precision variant is how one is tried), else the first
// preference of precision p that runs here, else naive (naive-<p>). A
// variant of reduced precision is never the engine's choice by preference
// for the op's own precision: with bf16 attention over an F32 cache the
// model no longer meets its agreement with llama.cpp (the oracle tests).
func (d *Dispatcher) resolveAt(op string, p ledger.Precision) (ledger.Variant, error) {
	if _, ok := ledger.LookupOp(op); !ok {
		return ledger.Variant{}, fmt.Errorf("promoted: unknown op %q", op)
	}
	if name, ok := d.overrides[op]; ok {
		v, ok := d.reg.Lookup(op, name)
		switch {
		case !ok:
			return ledger.Variant{}, fmt.Errorf("promoted: %s asks for %s variant %q, which is not registered", OverrideEnv, op, name)
		case p != "" && v.Precision != p:
			// Forcing a kernel of another precision never changes a
			// 16-bit cache's arithmetic: fall through to the preferences.
		case len(v.Missing()) > 0:
			return ledger.Variant{}, fmt.Errorf("promoted: %s asks for %s, which needs %s, absent here", OverrideEnv, v.ID(), strings.Join(v.Missing(), ", "))
		default:
			return d.record(op, v), nil
		}
	}
	if p == "" {
		if v, ok := d.bundled(op); ok {
			return d.record(op, v), nil
		}
	}
	for _, c := range d.prefs.Ops[op] {
		v, ok := d.reg.Lookup(op, c.Variant)
		if ok && c.AppliesTo(d.cpu) && v.Status != ledger.Retired && v.Available() && v.Precision == p {
			return d.record(op, v), nil
		}
	}
	name := "naive"
	if p != "" {
		name += "-" + string(p)
	}
	v, ok := d.reg.Lookup(op, name)
	if !ok || v.Precision != p {
		return ledger.Variant{}, fmt.Errorf("promoted: op %s has no usable variant of precision %q (not even %s)", op, p, name)
	}
	return d.record(op, v), nil
}

// bundled returns op's variant from the first bundle that applies to this
// processor and runs here whole (every kernel registered, not retired,
// available and at its op's own precision).
func (d *Dispatcher) bundled(op string) (ledger.Variant, bool) {
	for _, b := range d.prefs.Bundles {
		name, ok := b.Kernels[op]
		if !ok || !b.AppliesTo(d.cpu) || b.RuledOut(ledger.HasFeature) || !d.runsWhole(b) {
			continue
		}
		v, _ := d.reg.Lookup(op, name)
		return v, true
	}
	return ledger.Variant{}, false
}

func (d *Dispatcher) runsWhole(b Bundle) bool {
	for op, name := range b.Kernels {
		v, ok := d.reg.Lookup(op, name)
		if !ok || v.Status == ledger.Retired || !v.Available() || v.Precision != "" {
			return false
		}
	}
	return true
}

// prefers reports whether the preferences choose op's variant (a list or
// a bundle), rather than leaving it to the naive variant or a fallback.
func (d *Dispatcher) prefers(op string) bool {
	if len(d.prefs.Ops[op]) > 0 {
		return true
	}
	for _, b := range d.prefs.Bundles {
		if _, ok := b.Kernels[op]; ok {
			return true
		}
	}
	return false
}

func (d *Dispatcher) record(op string, v ledger.Variant) ledger.Variant {
	d.note(op, v.ID())
	return v
}

func (d *Dispatcher) note(op, what string) {
	d.mu.Lock()
	d.chosen[op] = what
	d.mu.Unlock()
}

// Chosen returns what each op resolved to so far ("op:variant"), sorted by
// op: what a results record should say the engine ran.
func (d *Dispatcher) Chosen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.chosen))
	for _, what := range d.chosen {
		out = append(out, what)
	}
	sort.Strings(out)
	return out
}

// mustResolve is for the f32 ops, which always have a naive variant (this
// package imports it), so failure means a bad override; Validate reports it
// as an error beforehand.
func (d *Dispatcher) mustResolve(op string) ledger.Variant {
	v, err := d.Resolve(op)
	if err != nil {
		panic(fmt.Sprintf("%v (call promoted.Validate at start-up to get this as an error)", err))
	}
	return v
}
