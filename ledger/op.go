package ledger

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/damascus-llm/damascus/quant"
)

// Kind is an op's signature: which of the kernel func types its variants
// implement.
type Kind int

const (
	KindMatVec Kind = iota + 1
	KindMatMul
	KindQuantize
	KindDequantize
	KindRMSNorm
	KindSiLUMul
	KindSoftmax
	KindRoPE
	KindAttention
	KindAttentionBatch
	KindAttentionHalf
)

// kindTypes are the kinds' kernel func types; a kind's name is its type's.
var kindTypes = map[Kind]reflect.Type{
	KindMatVec:         reflect.TypeFor[MatVec](),
	KindMatMul:         reflect.TypeFor[MatMul](),
	KindQuantize:       reflect.TypeFor[Quantize](),
	KindDequantize:     reflect.TypeFor[Dequantize](),
	KindRMSNorm:        reflect.TypeFor[RMSNorm](),
	KindSiLUMul:        reflect.TypeFor[SiLUMul](),
	KindSoftmax:        reflect.TypeFor[Softmax](),
	KindRoPE:           reflect.TypeFor[RoPE](),
	KindAttention:      reflect.TypeFor[Attention](),
	KindAttentionBatch: reflect.TypeFor[AttentionBatch](),
	KindAttentionHalf:  reflect.TypeFor[AttentionHalf](),
}

// String is the kernel func type's name, e.g. "MatVec".
func (k Kind) String() string {
	if t, ok := kindTypes[k]; ok {
		return t.Name()
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// KindOf returns the kind whose kernel func type impl is (a func literal of
// the same signature is of no kind: see normalize).
func KindOf(impl any) (Kind, bool) {
	t := reflect.TypeOf(impl)
	for k, kt := range kindTypes {
		if t == kt {
			return k, true
		}
	}
	return 0, false
}

// normalize checks that impl implements this kind's signature and returns it
// as the named func type: a non-nil func of that type, or a func literal of
// the same signature (converted). Other named types are refused, even of the
// same signature.
func (k Kind) normalize(impl any) (any, error) {
	if want, ok := kindTypes[k]; ok {
		v := reflect.ValueOf(impl)
		if v.Kind() == reflect.Func && !v.IsNil() && (v.Type() == want || v.Type().Name() == "" && v.Type().ConvertibleTo(want)) {
			return v.Convert(want).Interface(), nil
		}
	}
	return nil, fmt.Errorf("Impl is %T, want a non-nil ledger.%s", impl, k)
}

// An Op is one entry of the catalogue: a computation with one signature, a
// float64 reference (ledger/reference), cost model and test shapes.
type Op struct {
	Name    string
	Kind    Kind
	Type    quant.Type // weight type (matvec, matmul), block type (quantize, dequantize); F32 otherwise
	Summary string
	Shapes  []Shape
}

// ActType is the block type of the op's activations: ActivationType(Type)
// for matvec and matmul, F32 for the rest.
func (o *Op) ActType() quant.Type {
	if o.Kind == KindMatVec || o.Kind == KindMatMul {
		return ActivationType(o.Type)
	}
	return quant.F32
}

// A Shape is one problem size of an op. Which fields matter depends on the
// op's Kind:
//
//	MatVec:              Rows × K
//	MatMul:              Rows × K × N (N activation rows, e.g. prompt tokens)
//	Quantize/Dequantize: K values
//	RMSNorm/SiLUMul/Softmax: K values
//	RoPE:                Heads × HeadDim
//	Attention:           Heads, KVHeads, HeadDim over N cached positions
//	AttentionHalf:       as Attention
//	AttentionBatch:      Heads, KVHeads, HeadDim; N query tokens at positions Pos0 … Pos0+N-1
type Shape struct {
	Rows, K, N              int
	Heads, KVHeads, HeadDim int
	Pos0                    int
	// Model and Role say where a real shape comes from ("1B", "attn_q");
	// both are empty for the odd sizes that exercise tails.
	Model, Role string
}

// Real reports whether the shape comes from a real model rather than being a
// tail-exercising size.
func (s Shape) Real() bool { return s.Model != "" }

// Key is the shape's name within its op: compact, without spaces, '/' or
// '=', so it can be a sub-benchmark name ("2048x8192", "n=2049",
// "h32kv8d64ctx512").
func (s Shape) Key(k Kind) string {
	switch k {
	case KindMatVec:
		return fmt.Sprintf("%dx%d", s.Rows, s.K)
	case KindMatMul:
		return fmt.Sprintf("%dx%dx%d", s.Rows, s.K, s.N)
	case KindRoPE:
		return fmt.Sprintf("%dx%d", s.Heads, s.HeadDim)
	case KindAttention, KindAttentionHalf:
		return fmt.Sprintf("h%dkv%dd%dctx%d", s.Heads, s.KVHeads, s.HeadDim, s.N)
	case KindAttentionBatch:
		return fmt.Sprintf("h%dkv%dd%dn%dpos%d", s.Heads, s.KVHeads, s.HeadDim, s.N, s.Pos0)
	default:
		return fmt.Sprintf("n%d", s.K)
	}
}

// Label is Key plus where the shape comes from, for tables: "2048x8192 (1B ffn_down)".
func (s Shape) Label(k Kind) string {
	if !s.Real() {
		return s.Key(k)
	}
	return fmt.Sprintf("%s (%s %s)", s.Key(k), s.Model, s.Role)
}

// FLOPs is the op's floating-point (or integer multiply-add) operation count
// at shape s: 2 per multiply-add. For elementwise ops it counts the
// arithmetic of a straightforward implementation (exp as one operation).
func (o *Op) FLOPs(s Shape) float64 {
	switch o.Kind {
	case KindMatVec:
		return 2 * float64(s.Rows) * float64(s.K)
	case KindMatMul:
		return 2 * float64(s.Rows) * float64(s.K) * float64(s.N)
	case KindQuantize:
		return 3 * float64(s.K) // |x| and max, scale, round
	case KindDequantize:
		return 2 * float64(s.K) // scale and offset
	case KindRMSNorm:
		return 4 * float64(s.K) // square-add, scale, weight
	case KindSiLUMul:
		return 5 * float64(s.K) // neg, exp, add, divide, multiply
	case KindSoftmax:
		return 4 * float64(s.K) // max, subtract+exp, sum, scale
	case KindRoPE:
		return 3 * float64(s.Heads) * float64(s.HeadDim) // 4 mul + 2 add per pair
	case KindAttention, KindAttentionHalf:
		hd, ctx := float64(s.HeadDim), float64(s.N)
		return float64(s.Heads) * (4*hd*ctx + 4*ctx) // q·k, p·v, softmax
	case KindAttentionBatch:
		return float64(s.Heads) * (4*float64(s.HeadDim) + 4) * s.causalPairs()
	}
	return 0
}

// Bytes is the memory traffic at shape s if every input is read once and
// every output written once: the number a bandwidth roofline divides by.
func (o *Op) Bytes(s Shape) float64 {
	rowBytes := func(t quant.Type, n int) float64 {
		b, err := quant.RowSize(t, int64(n))
		if err != nil {
			return 0
		}
		return float64(b)
	}
	switch o.Kind {
	case KindMatVec:
		return float64(s.Rows)*rowBytes(o.Type, s.K) + rowBytes(o.ActType(), s.K) + 4*float64(s.Rows)
	case KindMatMul:
		return float64(s.Rows)*rowBytes(o.Type, s.K) + float64(s.N)*rowBytes(o.ActType(), s.K) + 4*float64(s.Rows)*float64(s.N)
	case KindQuantize, KindDequantize:
		return 4*float64(s.K) + rowBytes(o.Type, s.K)
	case KindRMSNorm, KindSiLUMul:
		return 12 * float64(s.K)
	case KindSoftmax:
		return 8 * float64(s.K)
	case KindRoPE:
		return 8*float64(s.Heads)*float64(s.HeadDim) + 4*float64(s.HeadDim)
	case KindAttention:
		kv := 2 * 4 * float64(s.N) * float64(s.KVHeads) * float64(s.HeadDim)
		return kv + 8*float64(s.Heads)*float64(s.HeadDim)
	case KindAttentionHalf:
		kv := 2 * 2 * float64(s.N) * float64(s.KVHeads) * float64(s.HeadDim)
		return kv + 8*float64(s.Heads)*float64(s.HeadDim)
	case KindAttentionBatch:
		kv := 2 * 4 * float64(s.Pos0+s.N) * float64(s.KVHeads) * float64(s.HeadDim)
		return kv + 8*float64(s.N)*float64(s.Heads)*float64(s.HeadDim)
	}
	return 0
}

// causalPairs is the number of (query token, cached position) pairs of a
// causal batch: token j sees Pos0+j+1 positions.
func (s Shape) causalPairs() float64 {
	n := float64(s.N)
	return n*float64(s.Pos0) + n*(n+1)/2
}

// Shape returns the op's shape whose Key is key.
func (o *Op) Shape(key string) (Shape, bool) {
	for _, s := range o.Shapes {
		if s.Key(o.Kind) == key {
			return s, true
		}
	}
	return Shape{}, false
}

// TypeName is the lower-case type name used in op names: "q4_k".
func TypeName(t quant.Type) string { return strings.ToLower(t.String()) }

// MatVecOp is the name of the matrix-vector op for weight type wt.
func MatVecOp(wt quant.Type) string { return "matvec/" + TypeName(wt) }

// AttentionHalfOp is the name of the single-token attention op over a KV
// cache of 16-bit type t (F16 or BF16).
func AttentionHalfOp(t quant.Type) string { return "attention/" + TypeName(t) }

// MatMulOp is the name of the matrix-matrix op for weight type wt.
func MatMulOp(wt quant.Type) string { return "matmul/" + TypeName(wt) }

// MatVecBatchOp is the name of the batched decode product for weight type
// wt: a matmul (KindMatMul, the MatMul signature) whose every activation
// row's outputs do not depend, bit for bit, on the other rows of the call
// nor on which weight rows it is given (a Batch's streams, whose tokens
// must not change with what else is in the batch).
func MatVecBatchOp(wt quant.Type) string { return "matvec_batch/" + TypeName(wt) }

// IsMatVecBatch reports whether op is a matvec_batch op.
func IsMatVecBatch(op string) bool { return strings.HasPrefix(op, "matvec_batch/") }

// QuantizeOp is the name of the activation-quantization op into type t.
func QuantizeOp(t quant.Type) string { return "quantize/" + TypeName(t) }

// DequantizeOp is the name of the dequantization op from type t.
func DequantizeOp(t quant.Type) string { return "dequantize/" + TypeName(t) }

// Names of the ops that take no type.
const (
	OpRMSNorm   = "rmsnorm"
	OpRoPE      = "rope"
	OpSoftmax   = "softmax"
	OpSiLUMul   = "silu_mul"
	OpAttention = "attention"
	// OpAttentionBatch is causal attention over a batch of query tokens
	// (prefill).
	OpAttentionBatch = "attention_batch"
)
