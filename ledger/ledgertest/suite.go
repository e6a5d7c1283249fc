package ledgertest

import (
	"os"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/quant"
)

// ShapesEnv selects the catalogue shapes Run gates every variant at:
// tails, real, 1B, 3B or all. The default is tails: the odd sizes that
// leave every remainder, where kernels break; the real model shapes are
// the ledger's (ledger gate) and the benchmarks' to sweep.
const ShapesEnv = "DAMASCUS_CONFORMANCE_SHAPES"

// Run is the conformance suite of the calling package: every variant
// registered in the default registry whose code lives in that package (an
// external test package X_test counts as X) is run, as subtest
// "<op>/<variant>", through
//
//   - the gate (ledger/gate) at every selected catalogue shape of its op:
//     the float64 reference, guards on both sides of the output, inputs
//     left untouched, no output left unwritten or written into a caller's
//     gap, no NaN/Inf, no panic, a matmul's prepared form bit for bit, and
//     ggml's own kernel (vec_dot, to_float) where the pinned llama.cpp is
//     installed and has the op;
//   - the gate again at the odd shapes with every input misaligned;
//   - the deeper checks of its op kind where this package has them
//     (adversarial blocks and every tail length for matvec, the fp32 ops
//     in place and out, attention layouts, quantizers byte for byte) and,
//     for matvec, the ggml vec_dot cross-check on ggml-made weights.
//
// A variant needing a feature this machine lacks is a logged skip. Run
// fails when the package registers no variant, so a family cannot drop out
// of the suite by registering under another package.
func Run(t *testing.T) {
	RunPackage(t, ledger.CallerPackage(1))
}

// RunPackage is Run for the variants whose code lives in package pkg (an
// import path).
func RunPackage(t *testing.T, pkg string) {
	sel, err := gate.ShapesFromEnv(ShapesEnv, gate.TailShapes)
	if err != nil {
		t.Fatal(err)
	}
	var vs []ledger.Variant
	for _, v := range ledger.All() {
		if v.Package() == pkg {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		t.Fatalf("package %s registers no variant in the ledger", pkg)
	}
	t.Logf("%d variants of package %s, shapes %q", len(vs), pkg, sel)
	for _, v := range vs {
		op, ok := ledger.LookupOp(v.Op)
		if !ok {
			t.Fatalf("variant %s: unknown op", v.ID())
		}
		t.Run(v.Op+"/"+v.Name, func(t *testing.T) {
			if miss := v.Missing(); len(miss) > 0 {
				t.Skipf("%s needs %s, which this machine lacks", v.ID(), strings.Join(miss, ", "))
			}
			t.Run("gate", func(t *testing.T) { Gate(t, op, v, sel) })
			t.Run("conformance", func(t *testing.T) { Conformance(t, op, v) })
		})
	}
}

// Gate runs v through the gate at every shape of op that sel selects, then
// at the odd shapes again with its inputs misaligned.
func Gate(t *testing.T, op *ledger.Op, v ledger.Variant, sel gate.Shapes) {
	const seed = 1
	n := 0
	for _, s := range op.Shapes {
		if !sel.Match(s) {
			continue
		}
		gs := gate.GateShape(op, s)
		for _, misaligned := range []bool{false, true} {
			if misaligned && s.Real() {
				continue
			}
			c, err := gate.NewCase(op, gs, seed)
			if err != nil {
				t.Fatalf("shape %s: %v", gs.Key(op.Kind), err)
			}
			name := gs.Key(op.Kind)
			if misaligned {
				misalignInputs(c)
				name += " misaligned"
			}
			m, err := c.Check(v)
			if err != nil {
				t.Errorf("gate, shape %s: %v", name, err)
				continue
			}
			n++
			if m.GGML != nil && !misaligned {
				t.Logf("shape %s: NMSE %.3g, against ggml %.3g", name, m.NMSE, m.GGML.NMSE)
			}
		}
	}
	if n == 0 && !t.Failed() {
		t.Fatalf("no shape of %s selected (%s=%q)", op.Name, ShapesEnv, os.Getenv(ShapesEnv))
	}
	t.Logf("%d checks passed (ggml cross-check %s)", n, gate.GGMLStatus())
}

// misalignInputs moves every input of c's workload to an odd offset: bytes
// by 1 to 63, float32 and 16-bit values by one element. The values (and so
// the reference) are unchanged.
func misalignInputs(c *gate.Case) {
	w := c.W
	off := 1
	for _, b := range []*[]byte{&w.W, &w.XQ} {
		if len(*b) > 0 {
			*b = Misalign(*b, off)
			off += 22
		}
	}
	for _, f := range []*[]float32{&w.X, &w.Aux, &w.K, &w.V, &w.Cos, &w.Sin} {
		shift(f)
	}
	shift(&w.K16)
	shift(&w.V16)
}

// shift moves *p's values one element along a fresh buffer.
func shift[T any](p *[]T) {
	if n := len(*p); n > 0 {
		x := make([]T, n+1)[1:]
		copy(x, *p)
		*p = x[:n:n]
	}
}

// Conformance runs this package's deeper checks of v's op kind: for
// matvec (Q4_K, Q6_K, Q8_0, F32, F16, BF16 weights) MatVec and GGMLMatVec,
// for matvec_batch (the same types) MatVecBatch, its contract included,
// for the quantizers into Q8_K and Q8_0 Quantize, for the fp32 ops RMSNorm,
// SiLUMul, Softmax and RoPE, for attention Attention, for batched attention
// AttentionBatch (a bf16 or f16 variant: AttentionBatchBF16/F16 against
// the naive-bf16/naive-f16 variant, when linked in). Other ops (matmul,
// dequantize, attention over a 16-bit cache, matvec and quantize of other
// types) have the gate's checks; the test logs which.
func Conformance(t *testing.T, op *ledger.Op, v ledger.Variant) {
	if !deepCheck(t, op, v) {
		t.Logf("no deeper check of %s here: the gate's checks are its conformance", op.Name)
	}
}

// deepCheck runs Conformance's checks, reporting false for an op it has
// none for. A panicking variant fails the test (as the gate fails it)
// instead of ending the test binary.
func deepCheck(t *testing.T, op *ledger.Op, v ledger.Variant) bool {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s panicked: %v", v.ID(), p)
		}
	}()
	switch f := v.Impl.(type) {
	case ledger.MatVec:
		switch op.Type {
		case quant.Q4_K, quant.Q6_K, quant.Q8_0, quant.F32, quant.F16, quant.BF16:
		default:
			return false
		}
		if v.Layout != nil { // held to the contract through its layout, repacked each call
			f = v.Layout.AsStored(f)
		}
		MatVec(t, op.Type, f)
		if !t.Failed() {
			t.Run("ggml", func(t *testing.T) { GGMLMatVec(t, op.Type, f) })
		}
	case ledger.MatMul:
		if !ledger.IsMatVecBatch(op.Name) {
			return false
		}
		switch op.Type {
		case quant.Q4_K, quant.Q6_K, quant.Q8_0, quant.F32, quant.F16, quant.BF16:
		default:
			return false
		}
		MatVecBatch(t, op.Type, v)
	case ledger.Quantize:
		if op.Type != quant.Q8_K && op.Type != quant.Q8_0 {
			return false
		}
		Quantize(t, op.Type, f)
	case ledger.RMSNorm:
		RMSNorm(t, f)
	case ledger.SiLUMul:
		SiLUMul(t, f)
	case ledger.Softmax:
		Softmax(t, f)
	case ledger.RoPE:
		RoPE(t, f)
	case ledger.Attention:
		Attention(t, f)
	case ledger.AttentionBatch:
		attentionBatch(t, op, v, f)
	default:
		return false
	}
	return true
}

// attentionBatch checks a batched attention of float32 precision against
// float64, and one of bf16 or f16 precision against naive-bf16/naive-f16.
func attentionBatch(t *testing.T, op *ledger.Op, v ledger.Variant, f ledger.AttentionBatch) {
	half := map[ledger.Precision]struct {
		ref   string
		check func(t *testing.T, f, ref AttentionBatchFunc)
	}{
		ledger.PrecisionBF16: {"naive-bf16", AttentionBatchBF16},
		ledger.PrecisionF16:  {"naive-f16", AttentionBatchF16},
	}
	h, ok := half[v.Precision]
	if !ok {
		AttentionBatch(t, f)
		return
	}
	if v.Status == ledger.Retired {
		// The roundings check is the engine's contract for a 16-bit cache's
		// kernel (llama.cpp's graph); the engine never picks a retired one.
		t.Skipf("%s is retired: the gate is its check, not %s's roundings", v.ID(), h.ref)
	}
	ref, ok := ledger.Lookup(op.Name, h.ref)
	if !ok {
		t.Skipf("%s precision: its reference %s:%s is not linked into this test", v.Precision, op.Name, h.ref)
	}
	h.check(t, f, ref.Impl.(ledger.AttentionBatch))
}
