package ledger

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/damascus-llm/damascus/quant"
)

// Family names the technique a variant uses. A family is usually one package
// under variants/.
type Family string

// The families the ledger knows. New ones may be added as they appear.
const (
	FamilyNaive           Family = "naive"
	FamilyGoUnrolled      Family = "go-unrolled"
	FamilyAVX2            Family = "avx2"
	FamilyAVX512          Family = "avx512"
	FamilyAVX512VNNI      Family = "avx512-vnni"
	FamilyAMXBF16         Family = "amx-bf16"
	FamilyAMXInt8         Family = "amx-int8"
	FamilyFusedDequantAMX Family = "fused-dequant-amx"
	FamilyNEON            Family = "neon"
	FamilyCUDA            Family = "cuda"
	// FamilyMatVecLoop is a matmul made of the engine's current matvec
	// kernel applied row by row: the incumbent every matmul must beat.
	FamilyMatVecLoop Family = "matvec-loop"
	// FamilyPerToken is a batched attention made of the engine's current
	// single-token attention kernel applied token by token: the incumbent
	// every attention_batch variant must beat.
	FamilyPerToken Family = "per-token"
)

// Status is where a variant stands in the ledger.
type Status string

const (
	// Experimental variants are gated and timed but used by the engine only
	// when promoted/ lists them.
	Experimental Status = "experimental"
	// Promoted variants won a head-to-head by the protocol's rule.
	Promoted Status = "promoted"
	// Retired variants stay in the ledger with their numbers but are never
	// dispatched to.
	Retired Status = "retired"
)

// A Variant is one implementation of an op. Register it in an init function
// next to its code.
type Variant struct {
	Op       string   // catalogue op name, e.g. "matvec/q4_k"
	Name     string   // unique within the op, e.g. "naive", "avx512-vnni"
	Family   Family   // technique
	Features []string // CPU/GPU features it needs (internal/cpufeat names, e.g. "avx2", "fma")
	Status   Status   // experimental unless stated
	Notes    string   // what it tries, what was learnt
	// Precision is PrecisionBF16 or PrecisionF16 for a variant that rounds
	// its operands to that type on purpose (a 16-bit KV cache's attention,
	// AMX-BF16 products); the gate then holds it to the looser thresholds of
	// that type. Empty: the op's own precision.
	Precision Precision
	// Impl is the kernel, one of this package's func types (MatVec, MatMul,
	// Quantize, Dequantize, RMSNorm, SiLUMul, Softmax, RoPE, Attention,
	// AttentionBatch), the one matching the op's Kind. A plain func literal
	// of the same signature is accepted and converted.
	Impl any
	// Prepared, for a matmul variant, is the same kernel in two steps
	// (see PreparedMatMul); nil when it has none.
	Prepared *PreparedMatMul
	// Layout, for a matvec, matvec_batch or matmul variant, is the weight
	// layout its Impl reads (see WeightLayout); nil: the weights as stored.
	Layout *WeightLayout
	// Registrant is the import path of the package that registered the
	// variant: Register sets it to the package whose init function made
	// the call (through helpers such as variants/internal/rowops too).
	Registrant string
}

// Precision names a class of arithmetic a variant commits to.
type Precision string

// The reduced precisions: operands rounded to bfloat16 (8 significant
// bits) or to IEEE half (11), products accumulated in float32.
const (
	PrecisionBF16 Precision = "bf16"
	PrecisionF16  Precision = "f16"
)

// ID names the variant across the ledger: "op:name".
func (v Variant) ID() string { return v.Op + ":" + v.Name }

// Available reports whether every feature the variant needs is present on
// this machine.
func (v Variant) Available() bool {
	for _, f := range v.Features {
		if !HasFeature(f) {
			return false
		}
	}
	return true
}

// Missing lists the features the variant needs that this machine lacks.
func (v Variant) Missing() []string {
	var m []string
	for _, f := range v.Features {
		if !HasFeature(f) {
			m = append(m, f)
		}
	}
	return m
}

// A Registry holds variants. Default is the one variant packages register
// into; tests may build their own.
type Registry struct {
	mu       sync.RWMutex
	variants map[string][]Variant // by op, in registration order
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{variants: map[string][]Variant{}} }

// Default is the process-wide registry.
var Default = NewRegistry()

// Register adds v to the default registry. It panics when v is malformed: an
// unknown op, an Impl that does not match the op's signature, a duplicate
// name. Those are programming mistakes caught the first time the package is
// loaded, as with flag redefinitions.
func Register(v Variant) {
	if v.Registrant == "" {
		v.Registrant = registrant()
	}
	if err := Default.Add(v); err != nil {
		panic("ledger.Register: " + err.Error())
	}
}

// MatVecImpl is one weight type's kernel in RegisterMatVecs's list.
type MatVecImpl struct {
	Weights quant.Type
	Impl    MatVec
	Notes   string
}

// RegisterMatVecs registers each of impls as the matvec of its weight type,
// all under one name, family and features (each variant gets its own copy
// of features): the one table a variants package whose matvec kernels
// differ only by weight type registers them from.
func RegisterMatVecs(name string, family Family, features []string, impls ...MatVecImpl) {
	for _, m := range impls {
		Register(Variant{Op: MatVecOp(m.Weights), Name: name, Family: family,
			Features: slices.Clone(features), Impl: m.Impl, Notes: m.Notes})
	}
}

// Add validates v and adds it to r.
func (r *Registry) Add(v Variant) error {
	op, ok := LookupOp(v.Op)
	if !ok {
		return fmt.Errorf("variant %q: unknown op %q", v.Name, v.Op)
	}
	if v.Name == "" || strings.ContainsAny(v.Name, " /:=") {
		return fmt.Errorf("op %s: variant name %q must be non-empty without spaces, '/', ':' or '='", v.Op, v.Name)
	}
	if v.Family == "" {
		return fmt.Errorf("variant %s: no family", v.ID())
	}
	switch v.Status {
	case "":
		v.Status = Experimental
	case Experimental, Promoted, Retired:
	default:
		return fmt.Errorf("variant %s: unknown status %q", v.ID(), v.Status)
	}
	for _, f := range v.Features {
		if !KnownFeature(f) {
			return fmt.Errorf("variant %s: unknown feature %q (see internal/cpufeat)", v.ID(), f)
		}
	}
	impl, err := op.Kind.normalize(v.Impl)
	if err != nil {
		return fmt.Errorf("variant %s: %w", v.ID(), err)
	}
	v.Impl = impl
	if p := v.Prepared; p != nil && (op.Kind != KindMatMul || p.Align < 1 || p.Size == nil || p.Prepare == nil || p.Run == nil) {
		return fmt.Errorf("variant %s: a prepared form needs a matmul op, Align ≥ 1, Size, Prepare and Run", v.ID())
	}
	if l := v.Layout; l != nil {
		if op.Kind != KindMatVec && op.Kind != KindMatMul || l.Name == "" || l.Weights != op.Type || l.Rows < 1 || l.GroupBytes == nil || l.Repack == nil || l.ActBytes == nil || l.Prepare == nil {
			return fmt.Errorf("variant %s: a weight layout needs a matvec, matvec_batch or matmul op, a name, the op's weight type, Rows ≥ 1, GroupBytes, Repack, ActBytes and Prepare", v.ID())
		}
		if v.Prepared != nil && IsMatVecBatch(op.Name) {
			return fmt.Errorf("variant %s: a batched decode product's weight layout lays out its activations (no PreparedMatMul beside it)", v.ID())
		}
	}
	v.Features = append([]string(nil), v.Features...)

	r.mu.Lock()
	defer r.mu.Unlock()
	for _, old := range r.variants[v.Op] {
		if old.Name == v.Name {
			return fmt.Errorf("variant %s registered twice", v.ID())
		}
	}
	r.variants[v.Op] = append(r.variants[v.Op], v)
	return nil
}

// Remove deletes the variant with the given op and name, reporting whether it
// was there. It exists for tests that register deliberately broken variants.
func (r *Registry) Remove(op, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.variants[op]
	for i, v := range vs {
		if v.Name == name {
			r.variants[op] = append(vs[:i:i], vs[i+1:]...)
			return true
		}
	}
	return false
}

// Variants returns the variants of op in registration order.
func (r *Registry) Variants(op string) []Variant {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Variant(nil), r.variants[op]...)
}

// Lookup returns op's variant called name.
func (r *Registry) Lookup(op, name string) (Variant, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.variants[op] {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// All returns every variant, ordered by catalogue op order then registration.
func (r *Registry) All() []Variant {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var all []Variant
	seen := map[string]bool{}
	for _, op := range Catalogue() {
		all = append(all, r.variants[op.Name]...)
		seen[op.Name] = true
	}
	var rest []string
	for name := range r.variants {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	for _, name := range rest {
		all = append(all, r.variants[name]...)
	}
	return all
}

// Variants returns the default registry's variants of op.
func Variants(op string) []Variant { return Default.Variants(op) }

// Lookup finds a variant in the default registry.
func Lookup(op, name string) (Variant, bool) { return Default.Lookup(op, name) }

// All returns every variant in the default registry.
func All() []Variant { return Default.All() }

// Package is the variant's package: its Registrant, or when that is unset
// the package that defines its function (its closure's, for a func
// literal); "" for neither. The conformance suite and the benchmarks
// select a family package's variants by it.
func (v Variant) Package() string {
	if v.Registrant != "" {
		return v.Registrant
	}
	f := reflect.ValueOf(v.Impl)
	if f.Kind() != reflect.Func || f.IsNil() {
		return ""
	}
	fn := runtime.FuncForPC(f.Pointer())
	if fn == nil {
		return ""
	}
	return FuncPackage(fn.Name())
}

// FuncPackage returns the import path in a function's full name
// ("example.com/a/b.F.func1" → "example.com/a/b").
func FuncPackage(fn string) string {
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// CallerPackage is the package of the function skip frames above its
// caller (0: the caller's own), an external test package X_test counted as
// X: the variant family a test or benchmark helper was called from.
func CallerPackage(skip int) string {
	pc, _, _, _ := runtime.Caller(skip + 1)
	return strings.TrimSuffix(FuncPackage(runtime.FuncForPC(pc).Name()), "_test")
}

// registrant is the package of the nearest init function on the stack
// above Register, or "" when Register was not called during a package's
// initialization.
func registrant() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if pkg := FuncPackage(f.Function); f.Function == pkg+".init" || strings.HasPrefix(f.Function, pkg+".init.") {
			return pkg
		}
		if !more {
			return ""
		}
	}
}
