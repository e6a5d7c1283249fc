package promoted

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The engine's fallbacks, registered as variants so that the head-to-heads
// time real kernels against what the engine would run without them.

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

// MatVecChunksName is the matvec_batch variant that runs the promoted
// matvec over chunks of weight rows, each chunk for every token in turn.
const MatVecChunksName = "matvec-chunks"

// MatVecChunkBytes is about how much weight data one chunk of matvec-chunks
// holds: a chunk is read from memory for the first token and from the
// cache for the others (the engine's dealt decode chunks are as large).
const MatVecChunkBytes = 256 << 10

// The engine's fallback batched decode is a variant too, the incumbent the
// batched kernels are timed against: what a Batch ran before them. A
// prefill without a matmul kernel of its own (Q5_K, Q8_0, Q4_0 weights)
// can run the same chunks (each ≈256 KiB of rows read from memory once for
// all the batch's tokens instead of once a token, as matvec-loop does).
func init() {
	const notes = "the promoted matvec over chunks of about 256 KiB of weight rows, each chunk for every token in turn " +
		"(from memory once, then from the cache)"
	for _, wt := range ledger.WeightTypes {
		impl := overDefaultMatVec(wt, func(mv ledger.MatVec) ledger.MatMul { return matVecChunks(mv, wt) })
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(wt), Name: MatVecChunksName, Family: ledger.FamilyMatVecLoop,
			Notes: notes + ": what a Batch runs without a promoted batched kernel", Impl: impl})
		ledger.Register(ledger.Variant{Op: ledger.MatMulOp(wt), Name: MatVecChunksName, Family: ledger.FamilyMatVecLoop,
			Notes: notes + ", for weight types without a matmul kernel", Impl: impl})
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
