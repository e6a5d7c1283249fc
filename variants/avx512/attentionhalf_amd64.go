//go:build !noasm

package avx512

import (
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func attnScores4F16(p, q *float32, k *uint16, stride, headDim, n int, scale float32)

//go:noescape
func attnScores4BF16(p, q *float32, k *uint16, stride, headDim, n int, scale float32)

//go:noescape
func attnWeightedSum4F16(out, p *float32, v *uint16, stride, headDim, n int)

//go:noescape
func attnWeightedSum4BF16(out, p *float32, v *uint16, stride, headDim, n int)

//go:noescape
func attnWeightedSum3WF16(out, p *float32, v *uint16, stride, headDim, n int)

//go:noescape
func attnWeightedSum3WBF16(out, p *float32, v *uint16, stride, headDim, n int)

//go:noescape
func attnWeightedSum3WPfF16(out, p *float32, v *uint16, stride, headDim, n int)

//go:noescape
func attnWeightedSum3WPfBF16(out, p *float32, v *uint16, stride, headDim, n int)

//go:noescape
func attnScores4x4F16(p, q *float32, k *uint16, stride, headDim, n, ldp int, scale float32)

//go:noescape
func attnScores4x4BF16(p, q *float32, k *uint16, stride, headDim, n, ldp int, scale float32)

// halfCache is a 16-bit cache type: BF16 (true) or F16.
type halfCache bool

const (
	f16Half  halfCache = false
	bf16Half halfCache = true
)

// rounding is the type's cacheRounding.
func (hc halfCache) rounding() cacheRounding {
	if hc {
		return bf16Cache
	}
	return f16Cache
}

// AttentionF16 is one token's attention over an F16 KV cache read as it is
// stored (ledger.AttentionHalf): AttentionGQA's passes with each key and
// value element widened as it is loaded, and the roundings of llama.cpp's
// graph over such a cache (query and probabilities rounded to F16). Bit for
// bit the attention of the widened cache, without writing it anywhere.
func AttentionF16(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache(f16Half, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionBF16 is AttentionF16 for a BF16 cache.
func AttentionBF16(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache(bf16Half, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

func attentionHalfCache(hc halfCache, out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 || nCtx <= 0 {
		gqaBlocks(hc.rounding(), out, q, nHeads, nKVHeads, headDim, nCtx, nil, nil)
		return
	}
	stride := nKVHeads * headDim
	_, _ = k[nCtx*stride-1], v[nCtx*stride-1]
	// The assembly is called directly, not through a func value, so that
	// nothing escapes (a call through a value would move the passes'
	// captures to the heap on every token).
	gqaBlocks(hc.rounding(), out, q, nHeads, nKVHeads, headDim, nCtx,
		func(p, q4 *float32, off int) {
			if hc {
				attnScores4BF16(p, q4, &k[off], 2*stride, headDim, nCtx, scale)
			} else {
				attnScores4F16(p, q4, &k[off], 2*stride, headDim, nCtx, scale)
			}
		},
		func(o4, p *float32, off int) {
			if hc {
				attnWeightedSum4BF16(o4, p, &v[off], 2*stride, headDim, nCtx)
			} else {
				attnWeightedSum4F16(o4, p, &v[off], 2*stride, headDim, nCtx)
			}
		})
}

// AttentionF16x4 is AttentionF16 with the scores four positions × four
// heads per pass (attnScores4x4AVX512's program, which sums each dot
// product in another order than AttentionF16: not its bits), the last
// nCtx%4 positions one at a time.
func AttentionF16x4(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache4x4(f16Half, walkHalves, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionBF16x4 is AttentionF16x4 for a BF16 cache.
func AttentionBF16x4(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache4x4(bf16Half, walkHalves, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionF16x4W1 is AttentionF16x4 with the weighted sum of a group of at
// most three query heads (the 3B's three) walking the cached values once
// per 128 values of the head (attnWeightedSum3WF16: once for a head of 128)
// instead of once per 64: each row's 256 bytes read at once, as the scores
// read the keys, not 128 bytes a pass twice. The same bits as
// AttentionF16x4. Groups of four or more heads and head sizes not a
// multiple of 128 keep AttentionF16x4's weighted sum.
func AttentionF16x4W1(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache4x4(f16Half, walkOnce, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionBF16x4W1 is AttentionF16x4W1 for a BF16 cache.
func AttentionBF16x4W1(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache4x4(bf16Half, walkOnce, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionF16x4W1Pf is AttentionF16x4W1 with a PREFETCHT0 of each row's
// 256 bytes 32 positions ahead of the weighted sum (attnWeightedSum3WPfF16).
func AttentionF16x4W1Pf(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache4x4(f16Half, walkOncePrefetch, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionBF16x4W1Pf is AttentionF16x4W1Pf for a BF16 cache.
func AttentionBF16x4W1Pf(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache4x4(bf16Half, walkOncePrefetch, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// wsumWalk is how a 16-bit cache's weighted sum walks the positions.
type wsumWalk int

const (
	walkHalves       wsumWalk = iota // attnWeightedSum4: once per 64 values of the head, four heads
	walkOnce                         // attnWeightedSum3W: once per 128 values, three heads
	walkOncePrefetch                 // walkOnce prefetching 32 rows ahead
)

func attentionHalfCache4x4(hc halfCache, walk wsumWalk, out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 || headDim%16 != 0 || nCtx <= 0 {
		attentionHalfCache(hc, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
		return
	}
	stride := nKVHeads * headDim
	_, _ = k[nCtx*stride-1], v[nCtx*stride-1]
	n4 := nCtx &^ 3
	// Every block of gqaBlocks holds min(4, group) heads, so a group of at
	// most three fits the three-head weighted sum whole.
	once := nHeads/nKVHeads <= 3 && headDim%128 == 0
	gqaBlocks(hc.rounding(), out, q, nHeads, nKVHeads, headDim, nCtx,
		func(p, q4 *float32, off int) {
			var tail [12]float32 // the last nCtx%4 positions' scores of the four heads
			if hc {
				attnScores4x4BF16(p, q4, &k[off], 2*stride, headDim, nCtx, nCtx, scale)
				if n4 < nCtx {
					attnScores4BF16(&tail[0], q4, &k[n4*stride+off], 2*stride, headDim, nCtx-n4, scale)
				}
			} else {
				attnScores4x4F16(p, q4, &k[off], 2*stride, headDim, nCtx, nCtx, scale)
				if n4 < nCtx {
					attnScores4F16(&tail[0], q4, &k[n4*stride+off], 2*stride, headDim, nCtx-n4, scale)
				}
			}
			if n4 < nCtx {
				rows := unsafe.Slice(p, 4*nCtx)
				for j := range 4 {
					copy(rows[j*nCtx+n4:(j+1)*nCtx], tail[j*(nCtx-n4):(j+1)*(nCtx-n4)])
				}
			}
		},
		func(o4, p *float32, off int) {
			switch {
			case walk == walkHalves || !once:
				if hc {
					attnWeightedSum4BF16(o4, p, &v[off], 2*stride, headDim, nCtx)
				} else {
					attnWeightedSum4F16(o4, p, &v[off], 2*stride, headDim, nCtx)
				}
			case walk == walkOnce:
				if hc {
					attnWeightedSum3WBF16(o4, p, &v[off], 2*stride, headDim, nCtx)
				} else {
					attnWeightedSum3WF16(o4, p, &v[off], 2*stride, headDim, nCtx)
				}
			default:
				if hc {
					attnWeightedSum3WPfBF16(o4, p, &v[off], 2*stride, headDim, nCtx)
				} else {
					attnWeightedSum3WPfF16(o4, p, &v[off], 2*stride, headDim, nCtx)
				}
			}
		})
}

func init() {
	for _, v := range []struct {
		name      string
		f16, bf16 ledger.AttentionHalf
		notes     string
	}{
		{"avx512", AttentionF16, AttentionBF16, "avx512-gqa's passes (four query heads per pass over each cached row) with the 16-bit keys and " +
			"values widened as they are loaded (VCVTPH2PS; bf16 by zero-extension and a 16-bit shift): bit for bit the widened cache's " +
			"attention, without writing it"},
		{"avx512-4x4", AttentionF16x4, AttentionBF16x4, "avx512 with avx512-gqa-4x4's scores (four positions × four heads per pass, " +
			"one transposing add tree instead of sixteen horizontal sums) on the 16-bit keys; head sizes that are multiples of 16, else avx512's"},
		{"avx512-4x4-w1", AttentionF16x4W1, AttentionBF16x4W1, "avx512-4x4 with the weighted sum of a group of at most three heads " +
			"(the 3B's) walking the values once per 128 values of the head (24 accumulators: three heads x 128), not once per 64 " +
			"(avx512-4x4's four heads x 64, each row's 256 bytes read 128 a pass, twice): the same bits; other groups and head sizes not a multiple of 128 as avx512-4x4"},
		{"avx512-4x4-w1pf", AttentionF16x4W1Pf, AttentionBF16x4W1Pf, "avx512-4x4-w1 with a PREFETCHT0 of each value row's 256 bytes " +
			"32 positions ahead of the weighted sum"},
	} {
		for t, impl := range map[quant.Type]ledger.AttentionHalf{quant.F16: v.f16, quant.BF16: v.bf16} {
			ledger.Register(ledger.Variant{Op: ledger.AttentionHalfOp(t), Name: v.name, Family: ledger.FamilyAVX512,
				Features: []string{"avx512f", "avx512vl", "avx512bw", "f16c"}, Impl: impl, Notes: v.notes})
		}
	}
}
