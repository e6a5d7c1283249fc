// Package workload builds the inputs of a ledger op at one shape —
// deterministic random weights, activations, tables — binds variants to
// them, and computes the float64 reference on all or a sample of the
// outputs. The gate, the timer and the benchmarks share it, so every variant
// sees the same data.
package workload

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/reference"
	"github.com/damascus-llm/damascus/quant"
)

// A Workload is one op at one shape with its inputs.
type Workload struct {
	Op    *ledger.Op
	Shape ledger.Shape

	W    []byte    // weights (matvec, matmul) or source blocks (dequantize)
	XQ   []byte    // activations in the op's activation type (matvec, matmul)
	X    []float32 // f32 input: quantize source, rmsnorm/softmax/rope input, silu gate, attention query
	Aux  []float32 // rmsnorm weight, silu up
	K, V []float32 // attention cache (attention/f16, /bf16: K16 and V16 widened, exactly)
	// K16 and V16 are a 16-bit attention cache in the op's type.
	K16, V16 []uint16
	Cos      []float32 // rope tables
	Sin      []float32
	LDD      int // matmul output row stride (≥ Rows); attention_batch query and output row stride (≥ Heads·HeadDim)

	Eps   float32 // rmsnorm
	Scale float32 // attention
	NeoX  bool    // rope layout

	rng *rand.Rand
}

// New builds the workload of op at shape s from seed.
func New(op *ledger.Op, s ledger.Shape, seed uint64) (*Workload, error) {
	w := &Workload{Op: op, Shape: s, rng: rand.New(rand.NewPCG(seed, uint64(op.Kind)))}
	var err error
	switch op.Kind {
	case ledger.KindMatVec, ledger.KindMatMul:
		n := 1
		if op.Kind == ledger.KindMatMul {
			n = s.N
			w.LDD = s.Rows
			if !s.Real() {
				w.LDD = s.Rows + 3 // leaves gaps the gate checks stay untouched
			}
		}
		if w.W, err = w.weights(op.Type, s.Rows, s.K); err != nil {
			return nil, err
		}
		if w.XQ, err = w.encode(op.ActType(), w.floats(n*s.K, 1)); err != nil {
			return nil, err
		}
	case ledger.KindQuantize:
		w.X = w.activations(s.K)
	case ledger.KindDequantize:
		if w.W, err = w.weights(op.Type, 1, s.K); err != nil {
			return nil, err
		}
	case ledger.KindRMSNorm:
		w.X, w.Aux, w.Eps = w.floats(s.K, 1), w.floats(s.K, 0.5), 1e-5
		for i := range w.Aux {
			w.Aux[i] += 1
		}
	case ledger.KindSiLUMul:
		w.X, w.Aux = w.floats(s.K, 3), w.floats(s.K, 1)
	case ledger.KindSoftmax:
		w.X = w.floats(s.K, 4)
		if s.K > 2 {
			w.X[s.K/2] = float32(math.Inf(-1)) // a masked position
		}
	case ledger.KindRoPE:
		w.X = w.floats(s.Heads*s.HeadDim, 1)
		w.Cos, w.Sin = make([]float32, s.HeadDim/2), make([]float32, s.HeadDim/2)
		pos := 1 + w.rng.IntN(4096)
		for i := range w.Cos {
			theta := float64(pos) * math.Pow(500000, -2*float64(i)/float64(s.HeadDim))
			w.Cos[i], w.Sin[i] = float32(math.Cos(theta)), float32(math.Sin(theta))
		}
		w.NeoX = s.Heads%2 == 1 // odd tail shapes exercise the NeoX layout
	case ledger.KindAttention:
		kv := s.N * s.KVHeads * s.HeadDim
		w.X, w.K, w.V = w.floats(s.Heads*s.HeadDim, 1), w.floats(kv, 1), w.floats(kv, 1)
		w.Scale = float32(1 / math.Sqrt(float64(s.HeadDim)))
	case ledger.KindAttentionHalf:
		kv := s.N * s.KVHeads * s.HeadDim
		w.X = w.floats(s.Heads*s.HeadDim, 1)
		w.K16, w.K = w.halves(kv)
		w.V16, w.V = w.halves(kv)
		w.Scale = float32(1 / math.Sqrt(float64(s.HeadDim)))
	case ledger.KindAttentionBatch:
		width := s.Heads * s.HeadDim
		w.LDD = width
		if !s.Real() {
			w.LDD = width + 3 // leaves gaps the gate checks stay untouched
		}
		kv := (s.Pos0 + s.N) * s.KVHeads * s.HeadDim
		w.X, w.K, w.V = w.floats((s.N-1)*w.LDD+width, 1), w.floats(kv, 1), w.floats(kv, 1)
		w.Scale = float32(1 / math.Sqrt(float64(s.HeadDim)))
	default:
		return nil, fmt.Errorf("workload: op %s: unknown kind %v", op.Name, op.Kind)
	}
	return w, nil
}

func (w *Workload) floats(n int, sigma float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(w.rng.NormFloat64() * sigma)
	}
	return x
}

// halves are n normal values in the op's 16-bit type (F16 or BF16), as
// bits and widened (exactly).
func (w *Workload) halves(n int) ([]uint16, []float32) {
	narrow, widen := quant.Float32ToFP16, quant.FP16ToFloat32
	if w.Op.Type == quant.BF16 {
		narrow, widen = quant.Float32ToBF16, quant.BF16ToFloat32
	}
	h, x := make([]uint16, n), w.floats(n, 1)
	for i, v := range x {
		h[i] = narrow(v)
		x[i] = widen(h[i])
	}
	return h, x
}

// activations are normal values with a few outliers (the largest value of a
// block decides its scale) and, when there are several blocks, a zero block.
func (w *Workload) activations(n int) []float32 {
	x := w.floats(n, 1)
	for i := 0; i < n; i += 97 {
		x[i] *= 8
	}
	if bs := w.Op.Type.BlockSize(); bs > 1 && n >= 2*bs {
		clear(x[bs : 2*bs])
	}
	return x
}

func (w *Workload) encode(t quant.Type, x []float32) ([]byte, error) {
	size, err := quant.RowSize(t, int64(len(x)))
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	b := make([]byte, size)
	if err := quant.Quantize(t, x, b); err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	return b, nil
}

// weights returns rows×k random weights of type t. Quantized types get
// random quant bytes (every bit pattern occurs) with finite, moderate block
// scales, which is far cheaper than quantizing floats at the real shapes.
func (w *Workload) weights(t quant.Type, rows, k int) ([]byte, error) {
	switch t {
	case quant.F32, quant.F16, quant.BF16, quant.Q8_K:
		return w.encode(t, w.floats(rows*k, 1))
	}
	size, err := quant.RowSize(t, int64(rows)*int64(k))
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	b := make([]byte, size)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], w.rng.Uint64())
	}
	scale := func(off int, lo, hi float32) {
		v := lo + (hi-lo)*w.rng.Float32()
		binary.LittleEndian.PutUint16(b[off:], quant.Float32ToFP16(v))
	}
	ts := t.TypeSize()
	for o := 0; o < len(b); o += ts {
		switch t {
		case quant.Q4_K, quant.Q5_K:
			scale(o, 2e-4, 2e-3)   // d
			scale(o+2, 1e-4, 1e-3) // dmin
		case quant.Q6_K:
			scale(o+208, 1e-4, 1e-3)
		case quant.Q8_0, quant.Q4_0:
			scale(o, 1e-3, 1e-2)
		default:
			return nil, fmt.Errorf("workload: no weight generator for %s", t)
		}
	}
	return b, nil
}

// OutLen is the length of the output buffer: float32 elements, or bytes
// for quantize.
func (w *Workload) OutLen() int {
	s := w.Shape
	switch w.Op.Kind {
	case ledger.KindMatVec:
		return s.Rows
	case ledger.KindMatMul:
		return (s.N-1)*w.LDD + s.Rows
	case ledger.KindQuantize:
		n, _ := quant.RowSize(w.Op.Type, int64(s.K))
		return int(n)
	case ledger.KindDequantize, ledger.KindRMSNorm, ledger.KindSiLUMul, ledger.KindSoftmax:
		return s.K
	case ledger.KindRoPE:
		return s.Heads * s.HeadDim
	case ledger.KindAttention, ledger.KindAttentionHalf:
		return s.Heads * s.HeadDim
	case ledger.KindAttentionBatch:
		return (s.N-1)*w.LDD + s.Heads*s.HeadDim
	}
	return 0
}

// Strided reports whether the output is rows of width values LDD apart
// (matmul, attention_batch): the LDD-width values after each row but the
// last belong to the caller, and a variant must leave them untouched.
func (w *Workload) Strided() (rows, width int, ok bool) {
	switch w.Op.Kind {
	case ledger.KindMatMul:
		return w.Shape.N, w.Shape.Rows, true
	case ledger.KindAttentionBatch:
		return w.Shape.N, w.Shape.Heads * w.Shape.HeadDim, true
	}
	return 0, 0, false
}

// BytesOut reports whether the output is bytes (quantize) rather than float32.
func (w *Workload) BytesOut() bool { return w.Op.Kind == ledger.KindQuantize }

// InPlace reports whether the op overwrites its input (softmax, rope): the
// output buffer must then hold the input before each checked call (Prepare).
func (w *Workload) InPlace() bool {
	return w.Op.Kind == ledger.KindSoftmax || w.Op.Kind == ledger.KindRoPE
}

// Prepare readies an output buffer for a call: for in-place ops it copies the
// input into dst.
func (w *Workload) Prepare(dst []float32) {
	if w.InPlace() {
		copy(dst, w.X)
	}
}

// NewOutput returns a fresh output buffer of OutLen elements, prepared for a
// call: dstb for quantize, else dst (the other is nil), as Bind takes them.
func (w *Workload) NewOutput() (dst []float32, dstb []byte) {
	if w.BytesOut() {
		return nil, make([]byte, w.OutLen())
	}
	dst = make([]float32, w.OutLen())
	w.Prepare(dst)
	return dst, nil
}

// Bind returns a call of impl (a variant's Impl) on the workload's inputs,
// writing into dst (float32 outputs) or dstb (quantize). The buffers must
// have OutLen elements.
func (w *Workload) Bind(impl any, dst []float32, dstb []byte) (func(), error) {
	s := w.Shape
	bad := func() (func(), error) {
		return nil, fmt.Errorf("workload: %s: Impl is %T, want ledger.%s", w.Op.Name, impl, w.Op.Kind)
	}
	if k, ok := ledger.KindOf(impl); !ok || k != w.Op.Kind {
		return bad()
	}
	switch f := impl.(type) {
	case ledger.MatVec:
		return func() { f(dst, w.W, w.XQ, s.K) }, nil
	case ledger.MatMul:
		return func() { f(dst, w.LDD, w.W, s.Rows, w.XQ, s.N, s.K) }, nil
	case ledger.Quantize:
		return func() { f(dstb, w.X) }, nil
	case ledger.Dequantize:
		return func() { f(dst, w.W) }, nil
	case ledger.RMSNorm:
		return func() { f(dst, w.X, w.Aux, w.Eps) }, nil
	case ledger.SiLUMul:
		return func() { f(dst, w.X, w.Aux) }, nil
	case ledger.Softmax:
		return func() { f(dst) }, nil
	case ledger.RoPE:
		return func() { f(dst, s.Heads, s.HeadDim, w.Cos, w.Sin, w.NeoX) }, nil
	case ledger.Attention:
		return func() { f(dst, w.X, w.K, w.V, s.Heads, s.KVHeads, s.HeadDim, s.N, w.Scale) }, nil
	case ledger.AttentionHalf:
		return func() { f(dst, w.X, w.K16, w.V16, s.Heads, s.KVHeads, s.HeadDim, s.N, w.Scale) }, nil
	case ledger.AttentionBatch:
		return func() { f(dst, w.X, w.LDD, w.K, w.V, s.N, s.Heads, s.KVHeads, s.HeadDim, s.Pos0, w.Scale) }, nil
	}
	return bad()
}

// Checksum digests every input, so a caller can tell whether a variant
// wrote into memory it was only meant to read.
func (w *Workload) Checksum() uint32 {
	h := crc32.NewIEEE()
	h.Write(w.W)
	h.Write(w.XQ)
	for _, f := range [][]float32{w.X, w.Aux, w.K, w.V, w.Cos, w.Sin} {
		if len(f) > 0 {
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f)))
		}
	}
	for _, u := range [][]uint16{w.K16, w.V16} {
		if len(u) > 0 {
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&u[0])), 2*len(u)))
		}
	}
	return h.Sum32()
}

// maxRefOutputs bounds how many outputs of a matrix op the float64
// reference computes; beyond it rows (and columns) are sampled, always
// including the first and the last.
const maxRefOutputs = 256

// Reference returns the float64 reference at output positions idx (indexes
// into the output buffer). Matrix ops at large shapes are sampled; the other
// ops are computed in full. For quantize, the reference is the input itself
// (the gate compares dequantized output with it).
func (w *Workload) Reference() (idx []int, ref []float64, err error) {
	s := w.Shape
	switch w.Op.Kind {
	case ledger.KindMatVec, ledger.KindMatMul:
		n := 1
		if w.Op.Kind == ledger.KindMatMul {
			n = s.N
		}
		rows := sample(w.rng, s.Rows, maxRefOutputs/min(n, 8))
		cols := sample(w.rng, n, 8)
		rb, _ := quant.RowSize(w.Op.Type, int64(s.K))
		ab, _ := quant.RowSize(w.Op.ActType(), int64(s.K))
		xs := make([][]float64, len(cols))
		for i, j := range cols {
			if xs[i], err = reference.Decode(w.Op.ActType(), w.XQ[int64(j)*ab:], s.K); err != nil {
				return nil, nil, err
			}
		}
		for _, r := range rows {
			wr, err := reference.Decode(w.Op.Type, w.W[int64(r)*rb:], s.K)
			if err != nil {
				return nil, nil, err
			}
			for i, j := range cols {
				idx = append(idx, j*w.LDD+r)
				ref = append(ref, reference.Dot(wr, xs[i]))
			}
		}
		return idx, ref, nil
	case ledger.KindQuantize:
		ref = make([]float64, len(w.X))
		for i, v := range w.X {
			ref[i] = float64(v)
		}
	case ledger.KindDequantize:
		if ref, err = reference.Decode(w.Op.Type, w.W, s.K); err != nil {
			return nil, nil, err
		}
	case ledger.KindRMSNorm:
		ref = reference.RMSNorm(w.X, w.Aux, w.Eps)
	case ledger.KindSiLUMul:
		ref = reference.SiLUMul(w.X, w.Aux)
	case ledger.KindSoftmax:
		x := make([]float64, len(w.X))
		for i, v := range w.X {
			x[i] = float64(v)
		}
		ref = reference.Softmax(x)
	case ledger.KindRoPE:
		ref = reference.RoPE(w.X, s.Heads, s.HeadDim, w.Cos, w.Sin, w.NeoX)
	case ledger.KindAttention, ledger.KindAttentionHalf:
		ref = reference.Attention(w.X, w.K, w.V, s.Heads, s.KVHeads, s.HeadDim, s.N, w.Scale)
	case ledger.KindAttentionBatch:
		ref = reference.AttentionBatch(w.X, w.LDD, w.K, w.V, s.N, s.Heads, s.KVHeads, s.HeadDim, s.Pos0, w.Scale)
		width := s.Heads * s.HeadDim
		idx = make([]int, len(ref))
		for i := range idx {
			idx[i] = i/width*w.LDD + i%width
		}
		return idx, ref, nil
	}
	idx = make([]int, len(ref))
	for i := range idx {
		idx[i] = i
	}
	return idx, ref, nil
}

// sample returns up to m sorted distinct indexes below n: all of them when
// n ≤ m, else the first, the last and random ones between.
func sample(rng *rand.Rand, n, m int) []int {
	if n <= m {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	pick := map[int]bool{0: true, n - 1: true}
	for len(pick) < m {
		pick[rng.IntN(n)] = true
	}
	out := make([]int, 0, m)
	for i := range n {
		if pick[i] {
			out = append(out, i)
		}
	}
	return out
}

// ColdBytes is how much weight memory Cycle spreads calls over: more than
// any last-level cache of the machines we run on, so each call streams its
// weights from DRAM as a decode step does (a model is read once per token).
const ColdBytes = 512 << 20

// maxCopies bounds the copies of small weight matrices.
const maxCopies = 64

// ColdCopies returns w followed by copies of it that differ only in holding
// their own copy of the weights, together at least ColdBytes (at most 64
// workloads), for matvec and matmul; for decode attention at a depth of at
// least ledger.ColdHistory positions, copies holding their own K and V (the
// 16-bit ones for attention/f16 and /bf16) likewise; for the other ops, whose
// inputs are activations that are hot in a real forward pass too, just w.
func (w *Workload) ColdCopies() []*Workload {
	var size int
	var clone func(c *Workload)
	switch w.Op.Kind {
	case ledger.KindMatVec, ledger.KindMatMul:
		size = len(w.W)
		clone = func(c *Workload) { c.W = append([]byte(nil), w.W...) }
	case ledger.KindAttention:
		if w.Shape.N >= ledger.ColdHistory {
			size = 4 * (len(w.K) + len(w.V))
			clone = func(c *Workload) {
				c.K, c.V = append([]float32(nil), w.K...), append([]float32(nil), w.V...)
			}
		}
	case ledger.KindAttentionHalf:
		if w.Shape.N >= ledger.ColdHistory {
			size = 2 * (len(w.K16) + len(w.V16))
			clone = func(c *Workload) {
				c.K16, c.V16 = append([]uint16(nil), w.K16...), append([]uint16(nil), w.V16...)
			}
		}
	}
	if size == 0 {
		return []*Workload{w}
	}
	n := min(maxCopies, max(1, (ColdBytes+size-1)/size))
	out := []*Workload{w}
	for range n - 1 {
		c := *w
		clone(&c)
		out = append(out, &c)
	}
	return out
}

// Cycle binds impl to each workload of copies (ColdCopies) and returns a
// call that rotates through them, so repeated calls do not find the weights
// in cache. Every call writes into the same dst or dstb.
func Cycle(copies []*Workload, impl any, dst []float32, dstb []byte) (func(), error) {
	calls := make([]func(), len(copies))
	for i, c := range copies {
		call, err := c.Bind(impl, dst, dstb)
		if err != nil {
			return nil, err
		}
		calls[i] = call
	}
	if len(calls) == 1 {
		return calls[0], nil
	}
	i := 0
	return func() {
		calls[i]()
		if i++; i == len(calls) {
			i = 0
		}
	}, nil
}

// WithLayout returns the workload as a variant with weight layout l reads
// it (nil: w itself): a copy whose W is repacked into l and whose XQ is
// laid out by l.Prepare. Its outputs are w's; its reference is w's
// (computed from w, not from the copy).
func (w *Workload) WithLayout(l *ledger.WeightLayout) (*Workload, error) {
	if l == nil {
		return w, nil
	}
	if w.Op.Kind != ledger.KindMatVec && w.Op.Kind != ledger.KindMatMul {
		return nil, fmt.Errorf("workload: %s: weight layout %s on a %s op", w.Op.Name, l.Name, w.Op.Kind)
	}
	s := w.Shape
	c := *w
	c.W = make([]byte, l.Size(s.Rows, s.K))
	if err := l.Repack(c.W, w.W, s.Rows, s.K); err != nil {
		return nil, fmt.Errorf("workload: %s: %w", w.Op.Name, err)
	}
	switch {
	case w.Op.Kind == ledger.KindMatVec:
		c.XQ = make([]byte, l.ActBytes(s.K))
		l.Prepare(c.XQ, w.XQ, s.K)
	case ledger.IsMatVecBatch(w.Op.Name):
		c.XQ = make([]byte, s.N*l.ActBytes(s.K))
		l.PrepareBatch(c.XQ, w.XQ, s.N, s.K)
	} // a matmul takes the op's activations
	return &c, nil
}

// InLayout is WithLayout over each of copies (ColdCopies), so that a
// layout variant's timed calls rotate through cold copies as the others'.
func InLayout(copies []*Workload, l *ledger.WeightLayout) ([]*Workload, error) {
	if l == nil {
		return copies, nil
	}
	out := make([]*Workload, len(copies))
	for i, c := range copies {
		var err error
		if out[i], err = c.WithLayout(l); err != nil {
			return nil, err
		}
	}
	return out, nil
}
