package promoted

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The Dispatcher's typed accessors: each op's kernel as the engine calls it.

// MatVec returns the matrix-vector kernel for weight type wt over weights
// as stored: a variant with a weight layout repacks them on every call
// (the wrappers' slow path, through WeightLayout.AsStored); the engine's
// single-token product takes MatVecKernel and the layout built at load.
func (d *Dispatcher) MatVec(wt quant.Type) (ledger.MatVec, error) {
	k, err := d.MatVecKernel(wt)
	if err != nil || k.Layout == nil {
		return k.MatVec, err
	}
	return k.Layout.AsStored(k.MatVec), nil
}

// A MatVecKernel is the matrix-vector kernel of one weight type: the
// variant's ID, its MatVec and the weight layout that reads (nil: the
// weights as stored).
type MatVecKernel struct {
	ID     string
	MatVec ledger.MatVec
	Layout *ledger.WeightLayout
}

// MatVecKernel resolves the matrix-vector kernel for weight type wt with
// its ID and weight layout.
func (d *Dispatcher) MatVecKernel(wt quant.Type) (MatVecKernel, error) {
	v, err := d.Resolve(ledger.MatVecOp(wt))
	if err != nil {
		return MatVecKernel{}, fmt.Errorf("matvec for %s weights: %w", wt, err)
	}
	return MatVecKernel{ID: v.ID(), MatVec: v.Impl.(ledger.MatVec), Layout: v.Layout}, nil
}

// A MatMulKernel is the matrix-matrix kernel of one weight type: the
// variant's ID, its MatMul, and its prepared form (nil when it has none).
// Layouts prepared by kernels of the same ID are interchangeable.
type MatMulKernel struct {
	ID       string
	MatMul   ledger.MatMul
	Prepared *ledger.PreparedMatMul
	// Layout is the weight layout MatMul reads (a matvec_batch variant's;
	// nil: the weights as stored).
	Layout *ledger.WeightLayout
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
	if forced || d.prefers(op) {
		v, err := d.Resolve(op)
		if err != nil {
			return MatMulKernel{}, fmt.Errorf("%s for %s weights: %w", what, wt, err)
		}
		if forced || (v.Name != "naive" && v.Name != fallback) {
			return MatMulKernel{ID: v.ID(), MatMul: v.Impl.(ledger.MatMul), Prepared: v.Prepared, Layout: v.Layout}, nil
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

// MatVecBatchKernel returns the batched decode kernel (op matvec_batch) of
// weight type wt, what a Batch's rows go through: the promoted (or forced)
// variant, else matvec-chunks over the promoted matvec, so that every
// token's products are the matvec's, as before the op existed. Its ID
// names the layout of its prepared form.
func (d *Dispatcher) MatVecBatchKernel(wt quant.Type) (MatMulKernel, error) {
	return d.matMulKernel(ledger.MatVecBatchOp(wt), "batched decode", wt, MatVecChunksName,
		func(mv ledger.MatVec) ledger.MatMul { return matVecChunks(mv, wt) })
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

// AttentionBatch returns the causal batch attention kernel of prefill.
// Without a promoted (or forced) attention_batch variant it loops the
// promoted single-token attention over the batch's tokens, which is what
// the engine ran before the op existed.
func (d *Dispatcher) AttentionBatch() ledger.AttentionBatch {
	op := ledger.OpAttentionBatch
	_, forced := d.overrides[op]
	if forced || d.prefers(op) {
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
