package cuda

import (
	"fmt"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
)

// The prefill attention of fattn.cu: a block per (KV head, tile of query
// tokens) that reads each key and value tile once for the whole tile of
// tokens, with an online softmax (flash attention) in float32.

// fattnThreads and fattnRows match FATT_THREADS and FATT_ROWS in fattn.cu.
const fattnThreads, fattnRows = 256, 64

// fattnKernels are the kernels by head size, with their key tile (BK, the
// second template argument of their fattn instance).
var fattnKernels = map[int]struct {
	name string
	bk   int
}{64: {"fattn_d64", 64}, 128: {"fattn_d128", 32}}

// fattnShared is the dynamic shared memory of heads of hd with key tiles of
// bk (fatt_tile::FLOATS).
func fattnShared(hd, bk int) int {
	return 4 * (fattnRows*(hd+4) + bk*(hd+4) + bk*hd + fattnRows*(bk+4) + 2*fattnRows)
}

// fattnDynamicShared is dynamicShared for the fattn kernels (0: not one).
func fattnDynamicShared(kernel string) int {
	for hd, k := range fattnKernels {
		if k.name == kernel {
			return fattnShared(hd, k.bk)
		}
	}
	return 0
}

// FlashPrefillFits reports whether AttentionFlash takes heads of hd values
// with nHeads query heads over nKV: heads of 64 or 128, at most 64 query
// heads per KV head (a block's 64 rows; BQ = 64/G tokens).
func FlashPrefillFits(nHeads, nKV, hd int) error {
	if _, ok := fattnKernels[hd]; !ok {
		return fmt.Errorf("cuda flash prefill attention: heads of %d values (it takes 64 or 128)", hd)
	}
	if nKV <= 0 || nHeads%nKV != 0 || nHeads/nKV > fattnRows {
		return fmt.Errorf("cuda flash prefill attention: %d query heads over %d KV heads (at most %d per KV head)", nHeads, nKV, fattnRows)
	}
	return nil
}

// FlashQueryTile is the query tokens a block of AttentionFlash takes.
func FlashQueryTile(nHeads, nKV int) int { return fattnRows / (nHeads / nKV) }

// AttentionFlash runs n tokens' causal attention (token j at position
// *posp+j, attending to positions 0 … *posp+j) over the layer's cache kc,
// vc ([KV head][position][hd], nctx positions) into out (n × nHeads × hd)
// from q (the same layout), in one launch and without scratch. Heads of 64
// or 128 values, at most 64 query heads per KV head; every pointer
// 16-byte aligned.
func (l *Launcher) AttentionFlash(out, q, kc, vc, posp cu.Ptr, n, nHeads, nKV, hd, nctx int, scale float32) error {
	if err := FlashPrefillFits(nHeads, nKV, hd); err != nil {
		return err
	}
	for _, p := range []cu.Ptr{out, q, kc, vc} {
		if p%16 != 0 {
			return fmt.Errorf("cuda flash prefill attention: pointer %#x not 16-byte aligned", uintptr(p))
		}
	}
	if n <= 0 {
		return nil
	}
	bq := FlashQueryTile(nHeads, nKV)
	tiles := (n + bq - 1) / bq
	if tiles > 65535 {
		return fmt.Errorf("cuda flash prefill attention: %d tokens, at most %d", n, 65535*bq)
	}
	k := fattnKernels[hd]
	return l.T.Launch(l.r.fns[k.name], cu.D2(nKV, tiles), cu.D1(fattnThreads), fattnShared(hd, k.bk), l.S,
		out.Arg(), q.Arg(), kc.Arg(), vc.Arg(), posp.Arg(), cu.I32(n), cu.I32(nHeads), cu.I32(nKV), cu.I32(nctx), cu.F32(scale))
}

// fattnPad is the head size the kernels run a contract head of hd values
// at (zero-padded: the padding adds nothing to the scores, and its output
// columns are dropped), or 0 where none does.
func fattnPad(hd int) int {
	switch {
	case hd <= 0:
		return 0
	case hd <= 64:
		return 64
	case hd <= 128:
		return 128
	}
	return 0
}

// hostPrefillAttention is the ledger.AttentionBatch form of AttentionFlash
// (cuda-fattn): the contract's k and v ([position][KV head][hd]) are
// regrouped per KV head as the engine's cache keeps them, q and out
// unstrided (ld) and every head zero-padded to the kernel's 64 or 128
// values, on the host; pos0 is read from device memory.
func hostPrefillAttention(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens == 0 || nHeads == 0 || headDim == 0 {
		return
	}
	hp := fattnPad(headDim)
	if err := FlashPrefillFits(nHeads, nKVHeads, hp); err != nil {
		panic(fmt.Sprintf("cuda-fattn: heads of %d: %v", headDim, err))
	}
	nctx := pos0 + nTokens
	kh, vh := perKVHead(k, v, nctx, nKVHeads, headDim, hp)
	qp := make([]float32, nTokens*nHeads*hp)
	for j := range nTokens {
		for h := range nHeads {
			copy(qp[(j*nHeads+h)*hp:][:headDim], q[j*ld+h*headDim:][:headDim])
		}
	}
	op := make([]float32, len(qp))
	host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
		l := &Launcher{r: r, T: t, S: s}
		pq, pk, pv, err := uploadXWAux(r, t, s, qp, kh, vh)
		if err != nil {
			return err
		}
		pp, err := upload(r, t, s, "pos", []int32{int32(pos0)})
		if err != nil {
			return err
		}
		pd, err := r.poisoned(t, s, "dst", len(op))
		if err != nil {
			return err
		}
		if err := l.AttentionFlash(pd, pq, pk, pv, pp, nTokens, nHeads, nKVHeads, hp, nctx, scale); err != nil {
			return err
		}
		return cu.DtoHAsync(t, op, pd, s)
	})
	for j := range nTokens {
		for h := range nHeads {
			copy(out[j*ld+h*headDim:][:headDim], op[(j*nHeads+h)*hp:][:headDim])
		}
	}
}

func registerPrefillAttention() {
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "cuda-fattn", Family: ledger.FamilyCUDA, Features: []string{Feature},
		Impl: ledger.AttentionBatch(hostPrefillAttention),
		Notes: "the engine's prefill attention (fattn.cu): a block per KV head and tile of 64 query rows (64/G tokens × the G heads), " +
			"key and value tiles read once into shared memory for all of them, 4×(BK/16) score and 4×(D/16) output register micro-tiles, " +
			"online softmax in float32; heads zero-padded to 64 or 128" + hostNote})
}
