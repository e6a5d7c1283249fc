// Package promoted is how the engine reaches kernels: for each op it returns
// the first variant of the committed preference list (preferences.json,
// written by `ledger promote`) that is registered, whose CPU features are
// present and that computes at the op's own precision, else the op's naive
// variant.
//
// The environment variable DAMASCUS_KERNELS overrides the choice for
// experiments, e.g. DAMASCUS_KERNELS=matvec/q4_k=avx2,rmsnorm=naive; naming a
// variant that is missing or cannot run here is an error, never a silent
// fallback.
package promoted

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"

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
	vendor    string // this processor's CPUID vendor, for entries limited to one

	mu     sync.Mutex
	chosen map[string]string // op → variant ID (or description), for records
}

// NewDispatcher builds a dispatcher. overrides maps op names to variant names.
func NewDispatcher(prefs Preferences, reg *ledger.Registry, overrides map[string]string) *Dispatcher {
	id, _ := cpufeat.CPUIdentity()
	return &Dispatcher{prefs: prefs, reg: reg, overrides: overrides, vendor: id.Vendor, chosen: map[string]string{}}
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
	for _, c := range d.prefs.Ops[op] {
		v, ok := d.reg.Lookup(op, c.Variant)
		if ok && c.AppliesTo(d.vendor) && v.Status != ledger.Retired && v.Available() && v.Precision == p {
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

// MatVec returns the matrix-vector kernel for weight type wt.
func (d *Dispatcher) MatVec(wt quant.Type) (ledger.MatVec, error) {
	v, err := d.Resolve(ledger.MatVecOp(wt))
	if err != nil {
		return nil, fmt.Errorf("matvec for %s weights: %w", wt, err)
	}
	return v.Impl.(ledger.MatVec), nil
}

// A MatMulKernel is the matrix-matrix kernel of one weight type: the
// variant's ID, its MatMul, and its prepared form (nil when it has none).
// Layouts prepared by kernels of the same ID are interchangeable.
type MatMulKernel struct {
	ID       string
	MatMul   ledger.MatMul
	Prepared *ledger.PreparedMatMul
}

// MatMul returns the matrix-matrix kernel for weight type wt. Without a
// promoted (or forced) matmul variant, it loops the promoted matvec over the
// activation rows: faster than the naive matmul once matvec has a SIMD winner.
func (d *Dispatcher) MatMul(wt quant.Type) (ledger.MatMul, error) {
	k, err := d.MatMulKernel(wt)
	return k.MatMul, err
}

// MatMulKernel is MatMul with the variant's ID and prepared form.
func (d *Dispatcher) MatMulKernel(wt quant.Type) (MatMulKernel, error) {
	return d.matMulKernel(ledger.MatMulOp(wt), "matmul", wt, MatVecLoopName,
		func(mv ledger.MatVec) ledger.MatMul { return matVecLoop(mv, ledger.ActivationType(wt)) })
}

// matMulKernel resolves op, a matrix-matrix op of weight type wt (what names
// it in errors): the promoted (or forced) variant, unless the preference is
// naive or the fallback itself, else the fallback, made by wrap over the
// promoted matvec and named fallback(matvec variant).
func (d *Dispatcher) matMulKernel(op, what string, wt quant.Type, fallback string, wrap func(ledger.MatVec) ledger.MatMul) (MatMulKernel, error) {
	if _, ok := ledger.LookupOp(op); !ok {
		return MatMulKernel{}, fmt.Errorf("%s for %s weights: promoted: unknown op %q", what, wt, op)
	}
	_, forced := d.overrides[op]
	if forced || len(d.prefs.Ops[op]) > 0 {
		v, err := d.Resolve(op)
		if err != nil {
			return MatMulKernel{}, fmt.Errorf("%s for %s weights: %w", what, wt, err)
		}
		if forced || (v.Name != "naive" && v.Name != fallback) {
			return MatMulKernel{ID: v.ID(), MatMul: v.Impl.(ledger.MatMul), Prepared: v.Prepared}, nil
		}
	}
	mv, err := d.MatVec(wt)
	if err != nil {
		return MatMulKernel{}, fmt.Errorf("%s for %s weights: %w", what, wt, err)
	}
	mvv, _ := d.Resolve(ledger.MatVecOp(wt))
	id := op + ":" + fallback + "(" + mvv.Name + ")"
	d.note(op, id)
	return MatMulKernel{ID: id, MatMul: wrap(mv)}, nil
}

// MatVecLoopName is the matmul variant that loops the promoted matvec.
const MatVecLoopName = "matvec-loop"

// The engine's fallback matmul is a variant too, so the head-to-head can
// time it against real matmul kernels: each call loops whatever matvec the
// default dispatcher picks for the weight type.
func init() {
	for _, wt := range ledger.WeightTypes {
		at := ledger.ActivationType(wt)
		ledger.Register(ledger.Variant{Op: ledger.MatMulOp(wt), Name: MatVecLoopName, Family: ledger.FamilyMatVecLoop,
			Notes: "the promoted matvec applied to each activation row: what the engine runs without a promoted matmul",
			Impl:  overDefaultMatVec(wt, func(mv ledger.MatVec) ledger.MatMul { return matVecLoop(mv, at) })})
	}
}

// overDefaultMatVec is the MatMul that runs wrap over the matvec the default
// dispatcher picks for wt at the time of each call.
func overDefaultMatVec(wt quant.Type, wrap func(ledger.MatVec) ledger.MatMul) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		mv, err := Default().MatVec(wt)
		if err != nil {
			panic(err) // the naive matvec always exists: only a bad override gets here
		}
		wrap(mv)(dst, ldd, w, rows, xq, n, k)
	}
}

func matVecLoop(mv ledger.MatVec, at quant.Type) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		xb := k / at.BlockSize() * at.TypeSize()
		for j := range n {
			mv(dst[j*ldd:j*ldd+rows], w, xq[j*xb:(j+1)*xb], k)
		}
	}
}

// MatVecBatchKernel returns the batched decode kernel (op matvec_batch) of
// weight type wt, what a Batch's rows go through: the promoted (or forced)
// variant, else matvec-chunks over the promoted matvec, so that every
// token's products are the matvec's, as before the op existed. Its ID
// names the layout of its prepared form.
func (d *Dispatcher) MatVecBatchKernel(wt quant.Type) (MatMulKernel, error) {
	return d.matMulKernel(ledger.MatVecBatchOp(wt), "batched decode", wt, MatVecChunksName,
		func(mv ledger.MatVec) ledger.MatMul { return matVecChunks(mv, wt) })
}

// MatVecBatchKernel is Default().MatVecBatchKernel.
func MatVecBatchKernel(wt quant.Type) (MatMulKernel, error) {
	return validated((*Dispatcher).MatVecBatchKernel, wt)
}

// MatVecChunksName is the matvec_batch variant that runs the promoted
// matvec over chunks of weight rows, each chunk for every token in turn.
const MatVecChunksName = "matvec-chunks"

// MatVecChunkBytes is about how much weight data one chunk of matvec-chunks
// holds: a chunk is read from memory for the first token and from the
// cache for the others (the engine's dealt decode chunks are as large).
const MatVecChunkBytes = 256 << 10

// The engine's fallback batched decode is a variant too, the incumbent the
// batched kernels are timed against: what a Batch ran before them.
func init() {
	for _, wt := range ledger.WeightTypes {
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(wt), Name: MatVecChunksName, Family: ledger.FamilyMatVecLoop,
			Notes: "the promoted matvec over chunks of about 256 KiB of weight rows, each chunk for every token in turn " +
				"(from memory once, then from the cache): what a Batch runs without a promoted batched kernel",
			Impl: overDefaultMatVec(wt, func(mv ledger.MatVec) ledger.MatMul { return matVecChunks(mv, wt) })})
	}
}

func matVecChunks(mv ledger.MatVec, wt quant.Type) ledger.MatMul {
	at := ledger.ActivationType(wt)
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		if rows <= 0 || n <= 0 {
			return
		}
		xb := k / at.BlockSize() * at.TypeSize()
		rs := k / wt.BlockSize() * wt.TypeSize()
		step := rows
		if rs > 0 {
			step = max(16, MatVecChunkBytes/rs&^15)
		}
		for lo := 0; lo < rows; lo += step {
			hi := min(lo+step, rows)
			for j := range n {
				mv(dst[j*ldd+lo:j*ldd+hi], w[lo*rs:hi*rs], xq[j*xb:(j+1)*xb], k)
			}
		}
	}
}

// Quantize returns the kernel converting f32 activations to t, the
// ActivationType of some weight type. For F32 it is a plain copy into bytes.
func (d *Dispatcher) Quantize(t quant.Type) (ledger.Quantize, error) {
	if t == quant.F32 {
		return copyF32, nil
	}
	v, err := d.Resolve(ledger.QuantizeOp(t))
	if err != nil {
		return nil, fmt.Errorf("quantize to %s: %w", t, err)
	}
	return v.Impl.(ledger.Quantize), nil
}

func copyF32(dst []byte, x []float32) {
	for i, v := range x {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

// Dequantize returns the kernel expanding blocks of t to f32 (e.g. for an
// embedding row). Types outside the catalogue use quant's scalar code.
func (d *Dispatcher) Dequantize(t quant.Type) (ledger.Dequantize, error) {
	op := ledger.DequantizeOp(t)
	if _, ok := ledger.LookupOp(op); !ok {
		if t == quant.F32 {
			return quant.DequantizeF32, nil
		}
		if !quant.CanDequantize(t) {
			return nil, fmt.Errorf("dequantize %s: no kernel", t)
		}
		d.note(op, op+":quant")
		return func(dst []float32, src []byte) { _ = quant.Dequantize(t, src, dst) }, nil
	}
	v, err := d.Resolve(op)
	if err != nil {
		return nil, fmt.Errorf("dequantize %s: %w", t, err)
	}
	return v.Impl.(ledger.Dequantize), nil
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

// RMSNorm returns the RMS normalization kernel.
func (d *Dispatcher) RMSNorm() ledger.RMSNorm {
	return d.mustResolve(ledger.OpRMSNorm).Impl.(ledger.RMSNorm)
}

// SiLUMul returns the SwiGLU gate kernel.
func (d *Dispatcher) SiLUMul() ledger.SiLUMul {
	return d.mustResolve(ledger.OpSiLUMul).Impl.(ledger.SiLUMul)
}

// Softmax returns the in-place softmax kernel.
func (d *Dispatcher) Softmax() ledger.Softmax {
	return d.mustResolve(ledger.OpSoftmax).Impl.(ledger.Softmax)
}

// RoPE returns the rotary embedding kernel.
func (d *Dispatcher) RoPE() ledger.RoPE { return d.mustResolve(ledger.OpRoPE).Impl.(ledger.RoPE) }

// Attention returns the single-token attention kernel.
func (d *Dispatcher) Attention() ledger.Attention {
	return d.mustResolve(ledger.OpAttention).Impl.(ledger.Attention)
}

// AttentionHalf returns the single-token attention over a 16-bit KV cache
// of type t (F16 or BF16) as stored.
func (d *Dispatcher) AttentionHalf(t quant.Type) (ledger.AttentionHalf, error) {
	v, err := d.Resolve(ledger.AttentionHalfOp(t))
	if err != nil {
		return nil, fmt.Errorf("attention over a %s cache: %w", t, err)
	}
	return v.Impl.(ledger.AttentionHalf), nil
}

// AttentionHalf is Default().AttentionHalf.
func AttentionHalf(t quant.Type) (ledger.AttentionHalf, error) {
	return validated((*Dispatcher).AttentionHalf, t)
}

// AttentionBatch returns the causal batch attention kernel of prefill.
// Without a promoted (or forced) attention_batch variant it loops the
// promoted single-token attention over the batch's tokens, which is what
// the engine ran before the op existed.
func (d *Dispatcher) AttentionBatch() ledger.AttentionBatch {
	op := ledger.OpAttentionBatch
	_, forced := d.overrides[op]
	if forced || len(d.prefs.Ops[op]) > 0 {
		v := d.mustResolve(op)
		if forced || (v.Name != "naive" && v.Name != PerTokenName) {
			return v.Impl.(ledger.AttentionBatch)
		}
	}
	attn := d.mustResolve(ledger.OpAttention)
	d.note(op, op+":"+PerTokenName+"("+attn.Name+")")
	return perToken(attn.Impl.(ledger.Attention))
}

// AttentionBatchAt returns the batch attention kernel of precision p for a
// KV cache of that precision (ledger.PrecisionBF16 for a BF16 cache): the
// first preference of that precision that runs here, else the op's
// naive-<precision> variant. An override applies only if its variant is of
// precision p, so forcing a float32 kernel never silently changes a bf16
// cache's arithmetic.
func (d *Dispatcher) AttentionBatchAt(p ledger.Precision) (ledger.AttentionBatch, error) {
	v, err := d.resolveAt(ledger.OpAttentionBatch, p)
	if err != nil {
		return nil, err
	}
	return v.Impl.(ledger.AttentionBatch), nil
}

// AttentionBatchAt is Default().AttentionBatchAt.
func AttentionBatchAt(p ledger.Precision) (ledger.AttentionBatch, error) {
	return validated((*Dispatcher).AttentionBatchAt, p)
}

// PerTokenName is the attention_batch variant that loops the promoted
// single-token attention.
const PerTokenName = "per-token"

// The engine's fallback batch attention is a variant too, so the
// head-to-head times batched kernels against it: each call loops whatever
// attention the default dispatcher picks.
func init() {
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: PerTokenName, Family: ledger.FamilyPerToken,
		Notes: "the promoted single-token attention applied to each token of the batch: K/V read once per token",
		Impl: ledger.AttentionBatch(func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
			perToken(Default().Attention())(out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
		})})
}

func perToken(attn ledger.Attention) ledger.AttentionBatch {
	return func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
		width, stride := nHeads*headDim, nKVHeads*headDim
		for j := range nTokens {
			ctx := pos0 + j + 1
			attn(out[j*ld:j*ld+width], q[j*ld:j*ld+width], k[:ctx*stride], v[:ctx*stride],
				nHeads, nKVHeads, headDim, ctx, scale)
		}
	}
}

var (
	defaultOnce sync.Once
	defaultD    *Dispatcher
	defaultErr  error
)

func initDefault() {
	defaultOnce.Do(func() {
		prefs, err := Embedded()
		if err != nil {
			defaultErr = err
			prefs = Preferences{Ops: map[string][]Choice{}}
		}
		over, err := ParseOverrides(os.Getenv(OverrideEnv))
		if err != nil && defaultErr == nil {
			defaultErr = err
		}
		if err := cpufeat.HideError(); err != nil && defaultErr == nil {
			defaultErr = err // a typo there would test the wrong fallbacks
		}
		defaultD = NewDispatcher(prefs, ledger.Default, over)
	})
}

// Validate reports, as an error naming the problem, anything that would make
// the package functions fail: a malformed embedded preferences file or
// $DAMASCUS_KERNELS or $DAMASCUS_CPU_HIDE, or an override naming a variant that is unknown or
// cannot run here. Programs call it at start-up so that a typo in the
// environment is a clear message, not a failure deep in a forward pass.
func Validate() error {
	initDefault()
	if defaultErr != nil {
		return defaultErr
	}
	ops := make([]string, 0, len(defaultD.overrides))
	for op := range defaultD.overrides {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		if _, err := defaultD.Resolve(op); err != nil {
			return err
		}
	}
	return nil
}

// Default is the dispatcher behind the package functions: the embedded
// preferences, the default registry and $DAMASCUS_KERNELS. The functions
// returning an error report a bad override there; the f32 ops, whose
// signatures have no error, panic with Validate's message instead.
func Default() *Dispatcher {
	initDefault()
	return defaultD
}

// validated runs get on the default dispatcher once Validate has checked
// $DAMASCUS_KERNELS and the preferences against the registry.
func validated[A, T any](get func(*Dispatcher, A) (T, error), a A) (T, error) {
	if err := Validate(); err != nil {
		var zero T
		return zero, err
	}
	return get(Default(), a)
}

// MatVec returns the engine's matrix-vector kernel for weight type wt.
func MatVec(wt quant.Type) (ledger.MatVec, error) {
	return validated((*Dispatcher).MatVec, wt)
}

// MatMul returns the engine's matrix-matrix kernel for weight type wt.
func MatMul(wt quant.Type) (ledger.MatMul, error) {
	return validated((*Dispatcher).MatMul, wt)
}

// MatMulFor returns the engine's matrix-matrix kernel for weight type wt
// with its ID and prepared form.
func MatMulFor(wt quant.Type) (MatMulKernel, error) {
	return validated((*Dispatcher).MatMulKernel, wt)
}

// Quantize returns the engine's activation quantizer into type t.
func Quantize(t quant.Type) (ledger.Quantize, error) {
	return validated((*Dispatcher).Quantize, t)
}

// Dequantize returns the engine's dequantizer from type t.
func Dequantize(t quant.Type) (ledger.Dequantize, error) {
	return validated((*Dispatcher).Dequantize, t)
}

// RMSNorm returns the engine's RMS normalization kernel.
func RMSNorm() ledger.RMSNorm { return Default().RMSNorm() }

// SiLUMul returns the engine's SwiGLU gate kernel.
func SiLUMul() ledger.SiLUMul { return Default().SiLUMul() }

// Softmax returns the engine's softmax kernel.
func Softmax() ledger.Softmax { return Default().Softmax() }

// RoPE returns the engine's rotary embedding kernel.
func RoPE() ledger.RoPE { return Default().RoPE() }

// Attention returns the engine's single-token attention kernel.
func Attention() ledger.Attention { return Default().Attention() }

// AttentionBatch returns the engine's causal batch attention kernel (prefill).
func AttentionBatch() ledger.AttentionBatch { return Default().AttentionBatch() }

// Chosen lists what the engine's ops resolved to so far.
func Chosen() []string { return Default().Chosen() }
