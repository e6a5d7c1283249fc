package ledger

import "github.com/damascus-llm/damascus/quant"

// Kernel signatures: the contract between the engine (model/llama, through
// promoted/) and every variant of an op. Slices are never retained. Lengths
// are the caller's promise; a variant may assume them and need not re-check.
type (
	// MatVec computes dst[r] = W[r]·x for r < len(dst). w holds len(dst) rows of
	// k values in the op's weight type (quant.RowSize(wt, k) bytes each); xq is
	// x quantized to ActivationType(wt) (for F32 activations, the float32 bytes).
	// Threads split work by slicing dst and w by rows.
	MatVec func(dst []float32, w []byte, xq []byte, k int)

	// MatMul computes dst[j*ldd+r] = W[r]·X[j] for r < rows, j < n: w holds
	// rows rows of k values (weight type), xq holds n activation rows of k
	// values each quantized to ActivationType(wt), back to back.
	MatMul func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int)

	// Quantize writes x (len(x) values, a multiple of the block size) into dst
	// in the op's block type.
	Quantize func(dst []byte, x []float32)

	// Dequantize expands src (whole blocks of the op's type) into dst.
	Dequantize func(dst []float32, src []byte)

	// RMSNorm: dst[i] = x[i] / sqrt(mean(x²)+eps) * weight[i].
	RMSNorm func(dst, x, weight []float32, eps float32)

	// SiLUMul: dst[i] = silu(gate[i]) * up[i], silu(v) = v/(1+e^-v).
	SiLUMul func(dst, gate, up []float32)

	// Softmax replaces x by softmax(x) in place.
	Softmax func(x []float32)

	// RoPE rotates each head of x (nHeads×headDim, adjacent-pair or NeoX
	// layout chosen by the caller's table) in place: cos and sin hold
	// headDim/2 values for the token's position.
	RoPE func(x []float32, nHeads, headDim int, cos, sin []float32, neox bool)

	// Attention computes one query token's grouped-query attention over nCtx
	// cached positions: for each query head h (of nHeads, sharing key/value
	// head h/(nHeads/nKVHeads)), out[h] = softmax(scale·q[h]·K[t]ᵀ)·V[t] over
	// t < nCtx. q and out hold nHeads×headDim values; k and v hold nCtx rows
	// of nKVHeads×headDim values back to back (row t at t*nKVHeads*headDim).
	Attention func(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32)

	// AttentionBatch is causal attention for nTokens query tokens at
	// positions pos0 … pos0+nTokens-1 (prefill): token j attends over the
	// cached positions t ≤ pos0+j, exactly as Attention with nCtx = pos0+j+1
	// would. Token j's nHeads×headDim query values are q[j*ld:], its output
	// out[j*ld:] (ld ≥ nHeads*headDim; the ld-nHeads*headDim values between
	// rows of out belong to the caller and are left untouched). k and v are
	// laid out as for Attention (position t at t*nKVHeads*headDim) and hold
	// at least pos0+nTokens positions. Batching lets a kernel read each
	// cached key and value row once for several query tokens.
	AttentionBatch func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32)

	// AttentionHalf is Attention over a 16-bit KV cache as stored: k and v
	// hold the op type's bits (F16 or BF16), laid out as Attention's. Its
	// arithmetic is llama.cpp's graph over such a cache: the query rounded
	// to the type, the scale and softmax in float32, the probabilities
	// normalized and then rounded to the type, products accumulated in
	// float32.
	AttentionHalf func(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32)
)

// A PreparedMatMul is a variant's MatMul in two steps, for a batch that
// several workers share: Prepare lays the activations out once, in the
// variant's own layout, and Run computes any range of weight rows from that
// layout. Without it every worker's MatMul call redoes the whole batch's
// layout, so a matrix can only be split into as many row ranges as there
// are workers, and a worker slowed down (a busy vCPU) holds the others at
// the barrier. Run's results are MatMul's, bit for bit (the gate checks).
type PreparedMatMul struct {
	// Align is the multiple of activation rows at which a Prepare range
	// may start.
	Align int
	// Size is the bytes of the layout of n activation rows of k values.
	Size func(n, k int) int
	// Prepare lays out activation rows [j0, j1) of xq (n rows of k values,
	// as MatMul's xq) into prep (Size(n, k) bytes). j0 is a multiple of
	// Align; calls over disjoint ranges may run at once.
	Prepare func(prep, xq []byte, j0, j1, n, k int)
	// Run is MatMul with xq laid out in prep by Prepare over all n rows.
	Run func(dst []float32, ldd int, w []byte, rows int, prep []byte, n, k int)
}

// ActivationType is the block type a weight type's dot products take their
// activations in, as in ggml's vec_dot_type: K-quants pair with Q8_K, the
// 32-value formats with Q8_0, and float weights with activations of their
// own precision (F32 with F32).
func ActivationType(weight quant.Type) quant.Type {
	switch weight {
	case quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K:
		return quant.Q8_K
	case quant.Q4_0, quant.Q5_0, quant.Q8_0:
		return quant.Q8_0
	case quant.Q4_1, quant.Q5_1:
		return quant.Q8_1
	case quant.F16:
		return quant.F16
	case quant.BF16:
		return quant.BF16
	default:
		return quant.F32
	}
}

// A WeightLayout is a layout of a matrix's weights that a variant reads
// instead of the file's, built once at load (Variant.Layout): rows of
// Weights in groups of Rows, GroupBytes(k) bytes a group, the last group
// padded with zero rows. Such a variant's kernel takes w in the layout
// (the groups holding its rows, Offset(r0, k) bytes in for a range that
// starts at row r0, a multiple of Rows) and each token's activations
// quantized to ActivationType(Weights) and then laid out by Prepare
// (ActBytes(k) bytes a token, a batch's tokens back to back). A matvec's
// and a batched decode product's (matvec_batch) variants may have one;
// so may a matmul's, which takes its activations as the op does (xq; its
// prepared form packs them its own way). Threads split their rows at
// multiples of Rows.
type WeightLayout struct {
	Name       string // names the layout, e.g. "q4_k-r16"
	Weights    quant.Type
	Rows       int
	GroupBytes func(k int) int
	// Repack lays out rows rows of k values as stored (src) in dst
	// (Size(rows, k) bytes), padding the last group with zero rows.
	Repack func(dst, src []byte, rows, k int) error
	// ActBytes and Prepare lay out one token's quantized activations of k
	// values for the variant: dst has ActBytes(k) bytes.
	ActBytes func(k int) int
	Prepare  func(dst, xq []byte, k int)
	// DequantizeRow, where the layout has it, expands row r of a matrix of
	// k columns in the layout (w) into dst (k values): a token embedding
	// placed in the layout is looked up through it. nil: a matrix in the
	// layout keeps its stored rows for that.
	DequantizeRow func(dst []float32, w []byte, r, k int)
}

// Size is the bytes of rows rows of k values in the layout.
func (l *WeightLayout) Size(rows, k int) int {
	return (rows + l.Rows - 1) / l.Rows * l.GroupBytes(k)
}

// Offset is where row r (a multiple of Rows) starts in the layout.
func (l *WeightLayout) Offset(r, k int) int { return r / l.Rows * l.GroupBytes(k) }

// Span is rows [lo, hi) of w, a matrix of rows rows of k values in the
// layout: lo a multiple of Rows, hi one too or rows (the padded last
// group then included).
func (l *WeightLayout) Span(w []byte, lo, hi, rows, k int) []byte {
	end := len(w)
	if hi < rows {
		end = l.Offset(hi, k)
	}
	return w[l.Offset(lo, k):end]
}

// PrepareBatch lays out n tokens' quantized activations (xq, back to back
// as the kernel contract holds them) in dst (n·ActBytes(k) bytes).
func (l *WeightLayout) PrepareBatch(dst, xq []byte, n, k int) {
	xb, ab := l.activationBytes(k), l.ActBytes(k)
	for j := range n {
		l.Prepare(dst[j*ab:][:ab], xq[j*xb:][:xb], k)
	}
}

func (l *WeightLayout) activationBytes(k int) int {
	n, err := quant.RowSize(ActivationType(l.Weights), int64(k))
	if err != nil {
		panic(err) // the contract's lengths were broken
	}
	return int(n)
}

// AsStored returns mv, a matvec over this layout, as a matvec over weights
// as the file stores them: each call repacks its rows and lays out its
// activations first. It is the conformance suite's view of such a variant
// and the fallback's, never a fast path.
func (l *WeightLayout) AsStored(mv MatVec) MatVec {
	return func(dst []float32, w, xq []byte, k int) {
		rows := len(dst)
		lw := make([]byte, l.Size(rows, k))
		if err := l.Repack(lw, w, rows, k); err != nil {
			panic(err) // the contract's lengths were broken
		}
		xr := make([]byte, l.ActBytes(k))
		l.Prepare(xr, xq, k)
		mv(dst, lw, xr, k)
	}
}

// AsStoredMatMul is AsStored for a batched product's kernel.
func (l *WeightLayout) AsStoredMatMul(mm MatMul) MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		lw := make([]byte, l.Size(rows, k))
		if err := l.Repack(lw, w, rows, k); err != nil {
			panic(err)
		}
		xr := make([]byte, n*l.ActBytes(k))
		l.PrepareBatch(xr, xq, n, k)
		mm(dst, ldd, lw, rows, xr, n, k)
	}
}
