package ledger

import (
	"fmt"

	"github.com/damascus-llm/damascus/quant"
)

// A ModelShape is the geometry of a real model whose matrix shapes the
// catalogue tests and times.
type ModelShape struct {
	Name                    string // "1B", "3B"
	Dim, FFN, Vocab         int
	Heads, KVHeads, HeadDim int
}

// Llama 3.2 geometries (from the models' config.json).
var (
	Llama32_1B = ModelShape{Name: "1B", Dim: 2048, FFN: 8192, Vocab: 128256, Heads: 32, KVHeads: 8, HeadDim: 64}
	Llama32_3B = ModelShape{Name: "3B", Dim: 3072, FFN: 8192, Vocab: 128256, Heads: 24, KVHeads: 8, HeadDim: 128}
	RealModels = []ModelShape{Llama32_1B, Llama32_3B}
)

// PrefillBatch is the number of activation rows matmul is timed at: llama.cpp's
// default n_ubatch.
const PrefillBatch = 512

// matrices returns a model's weight matrices as rows × k shapes; output is the
// vocabulary projection, by far the largest.
func (m ModelShape) matrices(output bool) []Shape {
	kv := m.KVHeads * m.HeadDim
	s := []Shape{
		{Rows: m.Dim, K: m.Dim, Model: m.Name, Role: "attn_q"},
		{Rows: kv, K: m.Dim, Model: m.Name, Role: "attn_kv"},
		{Rows: m.FFN, K: m.Dim, Model: m.Name, Role: "ffn_up"},
		{Rows: m.Dim, K: m.FFN, Model: m.Name, Role: "ffn_down"},
	}
	if output {
		s = append(s, Shape{Rows: m.Vocab, K: m.Dim, Model: m.Name, Role: "output"})
	}
	return s
}

// tailMatVec are odd sizes (rows × blocks of k) that exercise row and block
// remainders in unrolled and SIMD code.
var tailMatVec = [][2]int{{1, 1}, {3, 2}, {7, 3}, {17, 1}, {33, 5}, {5, 9}}

// tailLengths are odd vector lengths for elementwise ops.
var tailLengths = []int{1, 7, 15, 16, 17, 31, 33, 63, 65, 100, 257}

func matvecShapes(t quant.Type) []Shape {
	bs := t.BlockSize()
	var shapes []Shape
	for _, rb := range tailMatVec {
		k := rb[1] * bs
		if bs == 1 { // plain types: odd k too
			k = []int{1, 7, 15, 33, 100, 257}[len(shapes)%6]
		}
		shapes = append(shapes, Shape{Rows: rb[0], K: k})
	}
	for _, m := range RealModels {
		// The vocabulary projection in F32 is 1.5 GiB: left out.
		shapes = append(shapes, m.matrices(t != quant.F32)...)
	}
	return shapes
}

// tailMatMul are odd sizes (rows, blocks of k, activation rows) for matmul.
var tailMatMul = [][3]int{{3, 1, 2}, {7, 2, 5}, {17, 3, 3}, {33, 1, 17}, {16, 4, 16}}

func matmulShapes(t quant.Type) []Shape { return batchShapes(t, tailMatMul, PrefillBatch) }

// BatchDecodeRows are the activation rows matvec_batch is timed at: the
// decode tokens of a Batch's step, from a couple of streams to many.
var BatchDecodeRows = []int{2, 8, 16, 32}

// tailMatVecBatch are odd sizes (rows, blocks of k, activation rows) for
// matvec_batch: a single row, token counts that leave every remainder of a
// kernel's group of tokens.
var tailMatVecBatch = [][3]int{{3, 1, 1}, {7, 2, 5}, {17, 3, 9}, {33, 1, 13}, {16, 4, 16}, {5, 2, 31}}

// matvecBatchShapes are the odd sizes of tailMatVecBatch and each model's
// matrices at the BatchDecodeRows.
func matvecBatchShapes(t quant.Type) []Shape {
	return batchShapes(t, tailMatVecBatch, BatchDecodeRows...)
}

// batchShapes are the shapes of the ops that take several activation rows
// (matmul, matvec_batch): the odd sizes of tails, then each model's matrices
// (without the vocabulary projection) at every count of rows in ns.
func batchShapes(t quant.Type, tails [][3]int, ns ...int) []Shape {
	bs := t.BlockSize()
	if bs == 1 {
		bs = 16
	}
	var shapes []Shape
	for _, s := range tails {
		shapes = append(shapes, Shape{Rows: s[0], K: s[1] * bs, N: s[2]})
	}
	if t.BlockSize() == 1 {
		shapes[0].K, shapes[1].K = 7, 33 // plain types: odd k too
	}
	for _, m := range RealModels {
		for _, s := range m.matrices(false) {
			for _, n := range ns {
				s.N = n
				shapes = append(shapes, s)
			}
		}
	}
	return shapes
}

func lengthShapes(t quant.Type, real ...Shape) []Shape {
	bs := t.BlockSize()
	var shapes []Shape
	if bs == 1 {
		for _, n := range tailLengths {
			shapes = append(shapes, Shape{K: n})
		}
	} else {
		for _, nb := range []int{1, 3, 5} {
			shapes = append(shapes, Shape{K: nb * bs})
		}
	}
	return append(shapes, real...)
}

func realLengths(role string, pick func(ModelShape) int) []Shape {
	var s []Shape
	for _, m := range RealModels {
		s = append(s, Shape{K: pick(m), Model: m.Name, Role: role})
	}
	return s
}

func activationLengths() []Shape {
	var s []Shape
	for _, m := range RealModels {
		s = append(s, Shape{K: m.Dim, Model: m.Name, Role: "dim"})
	}
	return append(s, Shape{K: Llama32_1B.FFN, Model: "1B", Role: "ffn"})
}

func ropeShapes() []Shape {
	s := []Shape{{Heads: 1, HeadDim: 2}, {Heads: 3, HeadDim: 6}, {Heads: 2, HeadDim: 10}, {Heads: 5, HeadDim: 34}}
	for _, m := range RealModels {
		s = append(s,
			Shape{Heads: m.Heads, HeadDim: m.HeadDim, Model: m.Name, Role: "q"},
			Shape{Heads: m.KVHeads, HeadDim: m.HeadDim, Model: m.Name, Role: "k"})
	}
	return s
}

func attentionShapes() []Shape {
	s := []Shape{
		{Heads: 2, KVHeads: 1, HeadDim: 4, N: 1},
		{Heads: 4, KVHeads: 2, HeadDim: 8, N: 7},
		{Heads: 3, KVHeads: 3, HeadDim: 6, N: 33},
		{Heads: 8, KVHeads: 2, HeadDim: 16, N: 100},
	}
	for _, m := range RealModels {
		for _, ctx := range []int{256, 1024} {
			s = append(s, Shape{Heads: m.Heads, KVHeads: m.KVHeads, HeadDim: m.HeadDim, N: ctx,
				Model: m.Name, Role: fmt.Sprintf("ctx%d", ctx)})
		}
	}
	// Decode at depth as the engine calls the op: one KV head's group of
	// query heads over that head's own history (a head-major cache: its
	// rows contiguous, headDim apart), timed cold (ColdHistory).
	for _, m := range RealModels {
		for _, ctx := range []int{4096, 16384} {
			s = append(s, Shape{Heads: m.Heads / m.KVHeads, KVHeads: 1, HeadDim: m.HeadDim, N: ctx,
				Model: m.Name, Role: fmt.Sprintf("kv-head ctx%d", ctx)})
		}
	}
	return s
}

// ColdHistory is the depth from which a decode attention shape (attention,
// attention/f16, attention/bf16) is timed with its cache cold, rotating
// through copies of K and V as matvec does through copies of its weights: in
// a decode step a whole model's weights stream through the caches between
// one layer's attention and the next token's, so the history is read from
// memory. The shorter shapes stay timed hot, as their earlier records were.
const ColdHistory = 4096

// PrefillAttentionTokens is the number of query tokens attention_batch is
// timed at: one slice of a prefill batch as a worker would take it.
const PrefillAttentionTokens = 64

// attentionBatchShapes are odd layouts (grouped and not, head sizes off the
// 16-lane grid, batches that split a KV group's query rows unevenly, a first
// batch at position 0 and later ones) and, per model, a 64-token slice of a
// prefill at the start, middle and end of a 1024-token prompt, and one KV
// head's whole batch of 512 tokens (the first and second batch of that
// prompt), the task the engine hands out when workers are few.
func attentionBatchShapes() []Shape {
	s := []Shape{
		{Heads: 2, KVHeads: 1, HeadDim: 4, N: 1},
		{Heads: 4, KVHeads: 2, HeadDim: 8, N: 3, Pos0: 5},
		{Heads: 3, KVHeads: 3, HeadDim: 6, N: 9},
		{Heads: 8, KVHeads: 2, HeadDim: 16, N: 5, Pos0: 30},
		{Heads: 6, KVHeads: 2, HeadDim: 20, N: 7, Pos0: 17},
		{Heads: 8, KVHeads: 2, HeadDim: 33, N: 9, Pos0: 40},
	}
	for _, m := range RealModels {
		for _, pos0 := range []int{0, 448, 960} {
			s = append(s, Shape{Heads: m.Heads, KVHeads: m.KVHeads, HeadDim: m.HeadDim, N: PrefillAttentionTokens,
				Pos0: pos0, Model: m.Name, Role: fmt.Sprintf("prefill@%d", pos0)})
		}
		for _, pos0 := range []int{0, 512} {
			s = append(s, Shape{Heads: m.Heads / m.KVHeads, KVHeads: 1, HeadDim: m.HeadDim, N: 512,
				Pos0: pos0, Model: m.Name, Role: fmt.Sprintf("kv-head batch@%d", pos0)})
		}
	}
	return s
}

// WeightTypes are the weight types with matvec and matmul ops.
var WeightTypes = []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q8_0, quant.Q4_0, quant.F32, quant.F16, quant.BF16}

// ActivationTypes are the types activations are converted into before a dot
// product (ActivationType of each weight type, F32 aside).
var ActivationTypes = []quant.Type{quant.Q8_K, quant.Q8_0, quant.F16, quant.BF16}

// DequantizeTypes are the block types with a dequantize op.
var DequantizeTypes = []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q8_0, quant.Q4_0, quant.Q8_K, quant.F16, quant.BF16}

var catalogue = buildCatalogue()

func buildCatalogue() []*Op {
	var ops []*Op
	for _, t := range WeightTypes {
		ops = append(ops, &Op{Name: MatVecOp(t), Kind: KindMatVec, Type: t, Shapes: matvecShapes(t),
			Summary: fmt.Sprintf("y = W·x, W in %s, x in %s (decode)", t, ActivationType(t))})
	}
	for _, t := range WeightTypes {
		ops = append(ops, &Op{Name: MatMulOp(t), Kind: KindMatMul, Type: t, Shapes: matmulShapes(t),
			Summary: fmt.Sprintf("Y = W·Xᵀ, W in %s, X in %s (prefill)", t, ActivationType(t))})
	}
	for _, t := range WeightTypes {
		ops = append(ops, &Op{Name: MatVecBatchOp(t), Kind: KindMatMul, Type: t, Shapes: matvecBatchShapes(t),
			Summary: fmt.Sprintf("Y = W·Xᵀ for a batch of decode tokens, W in %s, X in %s, each token's outputs "+
				"bit for bit those it gets alone (a Batch's rows)", t, ActivationType(t))})
	}
	for _, t := range ActivationTypes {
		ops = append(ops, &Op{Name: QuantizeOp(t), Kind: KindQuantize, Type: t,
			Shapes:  lengthShapes(t, activationLengths()...),
			Summary: fmt.Sprintf("f32 activations to %s (ggml reference rounding)", t)})
	}
	for _, t := range DequantizeTypes {
		ops = append(ops, &Op{Name: DequantizeOp(t), Kind: KindDequantize, Type: t,
			Shapes:  lengthShapes(t, activationLengths()...),
			Summary: fmt.Sprintf("%s blocks to f32", t)})
	}
	ops = append(ops,
		&Op{Name: OpRMSNorm, Kind: KindRMSNorm, Type: quant.F32, Summary: "x/sqrt(mean(x²)+eps)·w",
			Shapes: lengthShapes(quant.F32, realLengths("dim", func(m ModelShape) int { return m.Dim })...)},
		&Op{Name: OpRoPE, Kind: KindRoPE, Type: quant.F32, Summary: "rotary position embedding, in place",
			Shapes: ropeShapes()},
		&Op{Name: OpSoftmax, Kind: KindSoftmax, Type: quant.F32, Summary: "softmax in place",
			Shapes: lengthShapes(quant.F32, Shape{K: 1024, Model: "1B", Role: "scores"},
				Shape{K: Llama32_1B.Vocab, Model: "1B", Role: "vocab"})},
		&Op{Name: OpSiLUMul, Kind: KindSiLUMul, Type: quant.F32, Summary: "silu(gate)·up (SwiGLU)",
			Shapes: lengthShapes(quant.F32, realLengths("ffn", func(m ModelShape) int { return m.FFN })[:1]...)},
		&Op{Name: OpAttention, Kind: KindAttention, Type: quant.F32, Summary: "one token's GQA attention over an f32 KV cache",
			Shapes: attentionShapes()},
		&Op{Name: OpAttentionBatch, Kind: KindAttentionBatch, Type: quant.F32,
			Summary: "causal GQA attention of a batch of query tokens over an f32 KV cache (prefill)",
			Shapes:  attentionBatchShapes()},
	)
	for _, t := range []quant.Type{quant.F16, quant.BF16} {
		ops = append(ops, &Op{Name: AttentionHalfOp(t), Kind: KindAttentionHalf, Type: t, Shapes: attentionShapes(),
			Summary: fmt.Sprintf("one token's GQA attention over a %s KV cache as stored, with llama.cpp's roundings for it", t)})
	}
	return ops
}

// Catalogue returns every op, in a stable order (matvec, matmul, matvec_batch, quantize,
// dequantize, then the f32 ops). The ops are shared: do not modify them.
func Catalogue() []*Op { return catalogue }

// LookupOp returns the op called name.
func LookupOp(name string) (*Op, bool) {
	for _, op := range catalogue {
		if op.Name == name {
			return op, true
		}
	}
	return nil, false
}
