//go:build !noasm

package avx512

import (
	"sync"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
)

//go:noescape
func attnScoresAVX512(p, q, k *float32, stride, headDim, n int, scale float32)

//go:noescape
func attnWeightedSumAVX512(out, p, v *float32, stride, headDim, n int)

//go:noescape
func attnScores4AVX512(p, q, k *float32, stride, headDim, n int, scale float32)

//go:noescape
func attnWeightedSum4AVX512(out, p, v *float32, stride, headDim, n int)

// scoreBufs reuses score rows across calls: no allocation per token.
var scoreBufs = sync.Pool{New: func() any { return new([]float32) }}

// growScores makes *buf hold at least n floats, doubling its capacity, so
// that decode (one more position per token) reallocates a logarithmic
// number of times, not on every token.
func growScores(buf *[]float32, n int) {
	if cap(*buf) < n {
		*buf = make([]float32, max(n, 2*cap(*buf), 1024))
	}
}

// Attention computes one query token's grouped-query attention over nCtx
// cached positions (ledger.Attention's contract): per query head, the
// scaled scores against every cached key, their softmax, and the weighted
// sum of the cached values, each step in AVX-512.
func Attention(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 {
		return
	}
	if nCtx <= 0 {
		clear(out[:nHeads*headDim])
		return
	}
	stride := nKVHeads * headDim
	_, _, _, _ = out[nHeads*headDim-1], q[nHeads*headDim-1], k[nCtx*stride-1], v[nCtx*stride-1]
	buf := scoreBufs.Get().(*[]float32)
	defer scoreBufs.Put(buf)
	growScores(buf, nCtx)
	p := (*buf)[:nCtx]
	group := nHeads / nKVHeads
	for h := 0; h < nHeads; h++ {
		off := (h / group) * headDim
		attnScoresAVX512(&p[0], &q[h*headDim], &k[off], 4*stride, headDim, nCtx, scale)
		softmaxAVX512(&p[0], nCtx)
		attnWeightedSumAVX512(&out[h*headDim], &p[0], &v[off], 4*stride, headDim, nCtx)
	}
}

// gqaScratch takes a score buffer from scoreBufs (the caller puts buf
// back) and carves it into a block of four heads' scores p (4·nCtx), their
// queries q4 and their outputs o4 (4·headDim each).
func gqaScratch(nCtx, headDim int) (buf *[]float32, p, q4, o4 []float32) {
	need := 4*nCtx + 8*headDim
	buf = scoreBufs.Get().(*[]float32)
	growScores(buf, need)
	s := *buf
	return buf, s[:4*nCtx], s[4*nCtx : 4*nCtx+4*headDim], s[4*nCtx+4*headDim : need]
}

// AttentionGQA is Attention that reads each cached key and value row once
// per four query heads of a group (Llama 3.2 groups 4 heads in 1B, 3 in
// 3B) instead of once per head: the four heads' scores and weighted sums
// are computed together. Groups are taken four heads at a time, the last
// padded with zero queries whose results are dropped.
func AttentionGQA(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionGQA(float32Cache, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// attentionGQA is AttentionGQA in float32 or, with a 16-bit cache's
// rounding, with the queries rounded before the scores and the
// probabilities after the softmax.
func attentionGQA(rc cacheRounding, out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 || nCtx <= 0 {
		gqaBlocks(rc, out, q, nHeads, nKVHeads, headDim, nCtx, nil, nil)
		return
	}
	stride := nKVHeads * headDim
	_, _ = k[nCtx*stride-1], v[nCtx*stride-1]
	gqaBlocks(rc, out, q, nHeads, nKVHeads, headDim, nCtx,
		func(p, q4 *float32, off int) { attnScores4AVX512(p, q4, &k[off], 4*stride, headDim, nCtx, scale) },
		func(o4, p *float32, off int) { attnWeightedSum4AVX512(o4, p, &v[off], 4*stride, headDim, nCtx) })
}

// gqaBlocks is the loop of attentionGQA: each KV head's group of query
// heads four at a time (the last padded with zero queries whose results
// are dropped), their scores by scores, the softmax (and a 16-bit cache's
// roundings), then their weighted sums by wsum; off is the KV head's
// element offset within a cached row. The passes are func literals its
// callers hand straight in, so they do not escape.
func gqaBlocks(rc cacheRounding, out, q []float32, nHeads, nKVHeads, headDim, nCtx int,
	scores func(p, q4 *float32, off int), wsum func(o4, p *float32, off int)) {
	if nHeads <= 0 || headDim <= 0 {
		return
	}
	if nCtx <= 0 {
		clear(out[:nHeads*headDim])
		return
	}
	_, _ = out[nHeads*headDim-1], q[nHeads*headDim-1]
	buf, p, q4, o4 := gqaScratch(nCtx, headDim)
	defer scoreBufs.Put(buf)
	group := nHeads / nKVHeads
	for g := 0; g < nKVHeads; g++ {
		off := g * headDim
		for h0 := g * group; h0 < (g+1)*group; h0 += 4 {
			n := min(4, (g+1)*group-h0)
			copy(q4, q[h0*headDim:(h0+n)*headDim])
			clear(q4[n*headDim:])
			if rc.query != nil {
				for i, x := range q4[:n*headDim] {
					q4[i] = rc.query(x)
				}
			}
			scores(&p[0], &q4[0], off)
			for j := 0; j < n; j++ {
				softmaxAVX512(&p[j*nCtx], nCtx)
				if rc.query != nil {
					rc.roundProbs(p[j*nCtx : (j+1)*nCtx])
				}
			}
			wsum(&o4[0], &p[0], off)
			copy(out[h0*headDim:(h0+n)*headDim], o4[:n*headDim])
		}
	}
}

//go:noescape
func prefetchLines(p *byte, n int)

// AttentionGQAPrefetch is AttentionGQA that first prefetches every cache
// line of the keys and values it will read, so that a short history that
// has left the caches arrives at memory bandwidth rather than one hardware
// prefetch stream at a time.
func AttentionGQAPrefetch(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads > 0 && headDim > 0 && nCtx > 0 {
		n := 4 * nCtx * nKVHeads * headDim
		_, _ = k[nCtx*nKVHeads*headDim-1], v[nCtx*nKVHeads*headDim-1]
		prefetchLines((*byte)(unsafe.Pointer(&k[0])), n)
		prefetchLines((*byte)(unsafe.Pointer(&v[0])), n)
	}
	AttentionGQA(out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

//go:noescape
func attnScores4x4AVX512(p, q, k *float32, stride, headDim, n, ldp int, scale float32)

// prefetchCap bounds the bytes of K (and of V) prefetched up front: beyond
// it a long history would push its own first lines out of L2 before use,
// and the hardware prefetcher has a long stream to follow anyway.
const prefetchCap = 128 << 10

// AttentionGQA4x4 is AttentionGQA with the scores of four positions ×
// four heads per pass (16 accumulators reduced by one transposing add
// tree, where AttentionGQA reduces each (position, head) dot product on its
// own), after prefetching the first prefetchCap bytes of the keys and of the
// values back to back; the loop over heads is AttentionGQA's (gqaBlocks).
// Head sizes off the 16-lane grid go to AttentionGQA.
func AttentionGQA4x4(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionGQA4x4(false, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

//go:noescape
func attnWeightedSum3WAVX512(out, p, v *float32, stride, headDim, n int)

// AttentionGQA4x4W1 is AttentionGQA4x4 with the weighted sum of a group of
// at most three query heads (the 3B's three) walking the cached values once
// per 128 values of the head (attnWeightedSum3WAVX512) instead of once per
// 64: the same bits. Groups of four or more heads and head sizes not a
// multiple of 128 keep AttentionGQA4x4's weighted sum.
func AttentionGQA4x4W1(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionGQA4x4(true, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

func attentionGQA4x4(walkOnce bool, out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 || headDim%16 != 0 || nCtx <= 0 {
		AttentionGQA(out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
		return
	}
	stride := nKVHeads * headDim
	_, _, _, _ = out[nHeads*headDim-1], q[nHeads*headDim-1], k[nCtx*stride-1], v[nCtx*stride-1]
	pf := min(4*nCtx*stride, prefetchCap)
	prefetchLines((*byte)(unsafe.Pointer(&k[0])), pf)
	prefetchLines((*byte)(unsafe.Pointer(&v[0])), pf)
	n4 := nCtx &^ 3
	// Every block of gqaBlocks holds min(4, group) heads: a group of at
	// most three fits the three-head weighted sum whole.
	once := walkOnce && nHeads/nKVHeads <= 3 && headDim%128 == 0
	gqaBlocks(float32Cache, out, q, nHeads, nKVHeads, headDim, nCtx,
		func(p, q4 *float32, off int) {
			attnScores4x4AVX512(p, q4, &k[off], 4*stride, headDim, nCtx, nCtx, scale)
			if m := nCtx - n4; m > 0 {
				// The last nCtx%4 positions, one at a time, into tail
				// (on the stack: the kernel is called directly), then
				// into their rows.
				var tail [4 * 3]float32
				attnScores4AVX512(&tail[0], q4, &k[n4*stride+off], 4*stride, headDim, m, scale)
				rows := unsafe.Slice(p, 4*nCtx)
				for j := range 4 {
					copy(rows[j*nCtx+n4:(j+1)*nCtx], tail[j*m:(j+1)*m])
				}
			}
		},
		func(o4, p *float32, off int) {
			if once {
				attnWeightedSum3WAVX512(o4, p, &v[off], 4*stride, headDim, nCtx)
			} else {
				attnWeightedSum4AVX512(o4, p, &v[off], 4*stride, headDim, nCtx)
			}
		})
}

// The single-token attentions share family and features; they register
// from one table.
func init() {
	for _, v := range []struct {
		name  string
		impl  ledger.Attention
		notes string
	}{
		{"avx512", Attention, "per query head: masked-FMA scores, the avx512 softmax, weighted sum 16 lanes at a time over all positions; K/V reread per head of a group"},
		{"avx512-gqa", AttentionGQA, "four query heads of a KV group at a time: each K and V row read once per four heads; 16 accumulators in the weighted sum"},
		{"avx512-gqa-prefetch", AttentionGQAPrefetch, "avx512-gqa after PREFETCHT0 of every K and V line it reads, back to back: decode's per-layer history has left the caches (the weights stream through them), and one short stream at a time ran at a third of memory bandwidth. In the 1B decode (2 threads, tokens alternated) attention fell from 856 to 521 us/token; PREFETCHT1, T2 and NTA were no better than T0"},
		{"avx512-gqa-4x4", AttentionGQA4x4, "avx512-gqa with the scores of 4 positions x 4 heads per pass reduced by one transposing add tree (about 3 instructions per score instead of 11, no per-lane masks; head sizes a multiple of 16), after prefetching up to 128 KiB of K and of V"},
		{"avx512-gqa-4x4-w1", AttentionGQA4x4W1, "avx512-gqa-4x4 with the weighted sum of a group of at most three heads (the 3B's) walking the values once per 128 values of the head (24 accumulators: three heads x 128) instead of once per 64 (four heads x 64, each row read in halves, twice): the same bits; other groups and head sizes as avx512-gqa-4x4"},
	} {
		ledger.Register(ledger.Variant{Op: ledger.OpAttention, Name: v.name, Family: ledger.FamilyAVX512,
			Features: []string{"avx512f", "avx512vl"}, Impl: v.impl, Notes: v.notes})
	}
}
