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
	attentionHalfCache4x4(f16Half, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

// AttentionBF16x4 is AttentionF16x4 for a BF16 cache.
func AttentionBF16x4(out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	attentionHalfCache4x4(bf16Half, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
}

func attentionHalfCache4x4(hc halfCache, out, q []float32, k, v []uint16, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	if nHeads <= 0 || headDim <= 0 || headDim%16 != 0 || nCtx <= 0 {
		attentionHalfCache(hc, out, q, k, v, nHeads, nKVHeads, headDim, nCtx, scale)
		return
	}
	stride := nKVHeads * headDim
	_, _ = k[nCtx*stride-1], v[nCtx*stride-1]
	n4 := nCtx &^ 3
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
			if hc {
				attnWeightedSum4BF16(o4, p, &v[off], 2*stride, headDim, nCtx)
			} else {
				attnWeightedSum4F16(o4, p, &v[off], 2*stride, headDim, nCtx)
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
	} {
		for t, impl := range map[quant.Type]ledger.AttentionHalf{quant.F16: v.f16, quant.BF16: v.bf16} {
			ledger.Register(ledger.Variant{Op: ledger.AttentionHalfOp(t), Name: v.name, Family: ledger.FamilyAVX512,
				Features: []string{"avx512f", "avx512vl", "avx512bw", "f16c"}, Impl: impl, Notes: v.notes})
		}
	}
}
