package cuda

import (
	"fmt"

	cu "github.com/damascus-llm/damascus/internal/cuda"
)

// attnThreads matches ATT_THREADS in attention.cu.
const attnThreads = 128

// attnPlan is how a decode attention is split: chunk positions a block,
// nChunks blocks per KV head, and the shared memory a block needs.
type attnPlan struct{ chunk, nChunks, shared int }

// planAttention splits nCtx positions so that about two blocks run per
// multiprocessor (chunks of 32 to 256 positions), within 48 KiB of shared
// memory a block.
func planAttention(sms, nHeads, nKV, headDim, nCtx int) (attnPlan, error) {
	g := nHeads / nKV
	want := (nCtx*nKV + 2*sms - 1) / (2 * sms)
	chunk := min(256, max(32, (want+31)/32*32))
	shared := func(c int) int { return 4 * (g*headDim + g*c + 2*g) }
	for chunk > 32 && shared(chunk) > 48<<10 {
		chunk /= 2
	}
	if shared(chunk) > 48<<10 {
		return attnPlan{}, fmt.Errorf("cuda attention: %d query heads of %d per KV head need %d bytes of shared memory", g, headDim, shared(chunk))
	}
	return attnPlan{chunk: chunk, nChunks: (nCtx + chunk - 1) / chunk, shared: shared(chunk)}, nil
}

// attention enqueues one token's attention: out (nHeads×headDim) from q and
// the cache k, v (nCtx rows of nKV×headDim); po and pml are scratch of
// plan.nChunks×nHeads×headDim and plan.nChunks×nHeads×2 floats.
func (r *gpu) attention(t *cu.Thread, s cu.Stream, p attnPlan, out, q, k, v, po, pml cu.Ptr, nHeads, nKV, headDim, nCtx int, scale float32) error {
	if err := t.Launch(r.fns["attn_split"], cu.D2(p.nChunks, nKV), cu.D1(attnThreads), p.shared, s,
		po.Arg(), pml.Arg(), q.Arg(), k.Arg(), v.Arg(), cu.I32(nHeads), cu.I32(nKV), cu.I32(headDim), cu.I32(nCtx),
		cu.F32(scale), cu.I32(p.chunk)); err != nil {
		return err
	}
	return t.Launch(r.fns["attn_combine"], cu.D1(nHeads), cu.D1(attnThreads), 0, s,
		out.Arg(), po.Arg(), pml.Arg(), cu.I32(nHeads), cu.I32(headDim), cu.I32(p.nChunks))
}

func hostAttention(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	n := nHeads * headDim
	if n == 0 || nCtx == 0 {
		return
	}
	kv := nCtx * nKVHeads * headDim
	host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
		p, err := planAttention(r.dev.SMs, nHeads, nKVHeads, headDim, nCtx)
		if err != nil {
			return err
		}
		pq, pk, pv, err := uploadXWAux(r, t, s, q[:n], k[:kv], v[:kv])
		if err != nil {
			return err
		}
		po, err := r.buf(t, "po", 4*p.nChunks*n)
		if err != nil {
			return err
		}
		pml, err := r.buf(t, "pml", 8*p.nChunks*nHeads)
		if err != nil {
			return err
		}
		pd, err := r.poisoned(t, s, "dst", n)
		if err != nil {
			return err
		}
		if err := r.attention(t, s, p, pd, pq, pk, pv, po, pml, nHeads, nKVHeads, headDim, nCtx, scale); err != nil {
			return err
		}
		return cu.DtoHAsync(t, out[:n], pd, s)
	})
}

// hostFlashAttention is the ledger.Attention form of the engine's decode
// attention (DecodeAttention): k and v, laid out [position][KV head][dim]
// as the contract has them, are regrouped per KV head as the engine's
// cache keeps them, and the position is read from device memory.
func hostFlashAttention(variant string) func(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	return func(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
		flashAttention(DecodeAttnKernels[variant], out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
	}
}

func flashAttention(kernel string, out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	n := nHeads * headDim
	if n == 0 || nCtx == 0 {
		return
	}
	if !DecodeAttentionFits(headDim) || nHeads/nKVHeads > MaxGroup {
		panic(fmt.Sprintf("cuda-flash attention: heads of %d, %d per KV head (at most 128 and %d)", headDim, nHeads/nKVHeads, MaxGroup))
	}
	kh, vh := perKVHead(k, v, nCtx, nKVHeads, headDim, headDim)
	host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
		l := &Launcher{r: r, T: t, S: s, DecodeAttn: kernel}
		pq, pk, pv, err := uploadXWAux(r, t, s, q[:n], kh, vh)
		if err != nil {
			return err
		}
		pp, err := upload(r, t, s, "pos", []int32{int32(nCtx - 1)})
		if err != nil {
			return err
		}
		po, err := r.buf(t, "po", 4*DecodeSplits*n)
		if err != nil {
			return err
		}
		pml, err := r.buf(t, "pml", 8*DecodeSplits*nHeads)
		if err != nil {
			return err
		}
		cnt, err := r.buf(t, "cnt", 4*nKVHeads)
		if err != nil {
			return err
		}
		if err := t.MemsetD32Async(cnt, 0, nKVHeads, s); err != nil {
			return err
		}
		pd, err := r.poisoned(t, s, "dst", n)
		if err != nil {
			return err
		}
		if err := l.DecodeAttention(pd, pq, pk, pv, po, pml, cnt, pp, nHeads, nKVHeads, headDim, nCtx, scale); err != nil {
			return err
		}
		return cu.DtoHAsync(t, out[:n], pd, s)
	})
}

// perKVHead regroups the contract's k and v ([position][KV head][hd], nCtx
// positions) per KV head as the engine's cache keeps them: [KV head]
// [position][stride], a row's hd values first and zeros after (a head
// padded to the kernel's size).
func perKVHead(k, v []float32, nCtx, nKVHeads, hd, stride int) (kh, vh []float32) {
	kh, vh = make([]float32, nKVHeads*nCtx*stride), make([]float32, nKVHeads*nCtx*stride)
	for t := range nCtx {
		for h := range nKVHeads {
			src, dst := (t*nKVHeads+h)*hd, (h*nCtx+t)*stride
			copy(kh[dst:dst+hd], k[src:src+hd])
			copy(vh[dst:dst+hd], v[src:src+hd])
		}
	}
	return kh, vh
}
