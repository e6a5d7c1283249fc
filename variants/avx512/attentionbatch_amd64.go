//go:build !noasm

package avx512

import (
	"math"
	"sync"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

//go:noescape
func attnbScores16(s, qt, k *float32, stride, headDim, n int)

//go:noescape
func attnbScores32(s0, s1, qt0, qt1, k *float32, stride, headDim, n int)

//go:noescape
func attnbSoftmax16(s *float32, n int, inv *float32)

//go:noescape
func attnbScale16(s *float32, n int, scale float32)

//go:noescape
func attnbRoundP16(s *float32, n int, inv *float32)

//go:noescape
func attnbRoundP16F16(s *float32, n int, inv *float32)

//go:noescape
func attnbWeightedSum16(o, p, v *float32, stride, headDim, n int, inv *float32)

//go:noescape
func attnbWeightedSum8x2(o, p, v *float32, stride, headDim, n int, inv *float32)

// A weightedSum is a block's pass over the values: o[l·headDim + c] =
// inv[l]·Σ_t p[t·16+l]·v[t][c] (attnbWeightedSum16 or attnbWeightedSum8x2).
type weightedSum func(o, p, v *float32, stride, headDim, n int, inv *float32)

// weightedSumFor is attnbWeightedSum8x2 when it takes headDim (a multiple
// of 32), else attnbWeightedSum16; the two give the same bits.
func weightedSumFor(headDim int) weightedSum {
	if headDim%32 == 0 {
		return attnbWeightedSum8x2
	}
	return attnbWeightedSum16
}

// attnbRows is the number of query rows (token, head) a block takes: one
// per lane of a vector.
const attnbRows = 16

// attnbScratch holds a call's buffers: the block's transposed queries, its
// scores (position-major), its outputs and reciprocal sums.
type attnbScratch struct {
	qt, s, o []float32
	inv      [attnbRows]float32
}

var attnbBufs = sync.Pool{New: func() any { return new(attnbScratch) }}

func attnbGrow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// AttentionBatch is causal attention for a batch of query tokens
// (ledger.AttentionBatch's contract) that reads each cached key and value
// row once per sixteen query rows instead of once per token. For each KV
// head, the query rows of its group — (token, head) pairs, token-major —
// are taken sixteen at a time, one per vector lane: the block's scores
// against every position the block's last token sees (query rows
// transposed, key elements broadcast), the causal mask on the ragged tail
// (at most fifteen positions, where earlier tokens of the block stop), a
// per-lane softmax, and one pass over the values for all sixteen rows.
// Llama 3.2's groups of 4 (1B) and 3 (3B) heads make every block full
// when the batch has a multiple of 4 (1B) or 16 (3B) tokens. A single
// token (decode) would fill only a group's lanes of a block: it goes to
// AttentionGQA, twice as fast there.
func AttentionBatch(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens == 1 && nHeads > 0 && headDim > 0 {
		width, nPos := nHeads*headDim, pos0+1
		stride := nKVHeads * headDim
		AttentionGQA(out[:width], q[:width], k[:nPos*stride], v[:nPos*stride], nHeads, nKVHeads, headDim, nPos, scale)
		return
	}
	attentionBlocks(float32Cache, attnbWeightedSum16, false, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchWS is AttentionBatch with the pass over the values in
// register tiles of eight rows × 32 columns (attnbWeightedSum8x2) where the
// head size allows: fewer loads per FMA, the same results bit for bit.
func AttentionBatchWS(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens == 1 && nHeads > 0 && headDim > 0 {
		AttentionBatch(out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
		return
	}
	attentionBlocks(float32Cache, weightedSumFor(headDim), false, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchS32 is AttentionBatch with two blocks' scores in one pass
// over the keys (attnbScores32): each key element broadcast once for 32
// query rows, each key row read once per 32. The same results bit for bit.
func AttentionBatchS32(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens == 1 {
		AttentionBatch(out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
		return
	}
	attentionBlocks(float32Cache, attnbWeightedSum16, true, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchWSS32 is AttentionBatchS32 with avx512-ws8x2's pass over
// the values: both of the fewer-loads forms, the same results bit for bit.
func AttentionBatchWSS32(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens == 1 {
		AttentionBatch(out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
		return
	}
	attentionBlocks(float32Cache, weightedSumFor(headDim), true, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchBF16 is AttentionBatch with the roundings of llama.cpp's
// graph over a bf16 KV cache, as naive.AttentionBatchBF16 spells them out:
// queries rounded to bf16 unscaled, the scale applied to the float32
// scores, the probabilities normalized and then rounded to bf16 before the
// pass over the values. Keys and values are used as given (the cache's
// bf16 values).
func AttentionBatchBF16(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionHalf(bf16Cache, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchF16 is AttentionBatchBF16 for an F16 cache: queries and
// probabilities rounded to IEEE half.
func AttentionBatchF16(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionHalf(f16Cache, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// attentionHalf is a 16-bit cache's attention: a batch in sixteen-row
// blocks, a single token (decode) four heads of a group at a time as
// AttentionGQA does (a block would leave most of its lanes idle).
func attentionHalf(rc cacheRounding, out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens == 1 {
		attentionGQA(rc, out, q, k, v, nHeads, nKVHeads, headDim, pos0+1, scale)
		return
	}
	attentionBlocks(rc, attnbWeightedSum16, false, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// cacheRounding is the arithmetic of the blocks: float32, or a 16-bit
// cache's roundings (queries and probabilities rounded to its type).
type cacheRounding struct {
	query func(float32) float32                 // nil: float32
	probs func(s *float32, n int, inv *float32) // normalize and round
}

// unitScales are the reciprocal sums of probabilities already normalized;
// package-level and never written, because a local array handed to a
// kernel called through a func value would be allocated on every call.
var unitScales = [attnbRows]float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// roundProbs rounds one row of normalized probabilities in place: whole
// vectors by the assembly pass, the tail by query's rounding.
func (rc cacheRounding) roundProbs(p []float32) {
	full := len(p) / attnbRows
	if full > 0 {
		rc.probs(&p[0], full, &unitScales[0])
	}
	for t := full * attnbRows; t < len(p); t++ {
		p[t] = rc.query(p[t])
	}
}

var (
	float32Cache = cacheRounding{}
	bf16Cache    = cacheRounding{quant.RoundBF16, attnbRoundP16}
	f16Cache     = cacheRounding{quant.RoundFP16, attnbRoundP16F16}
)

// attentionBlocks runs the sixteen-row blocks of every KV head, in float32
// or with a 16-bit cache's roundings, ws passing over the values. With
// pairs, two full blocks whose first sees at least eight positions share
// one pass over the keys (attnbScores32, the same scores bit for bit).
func attentionBlocks(rc cacheRounding, ws weightedSum, pairs bool, out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens <= 0 || nHeads <= 0 || headDim <= 0 {
		return
	}
	width, stride, nPos := nHeads*headDim, nKVHeads*headDim, pos0+nTokens
	_, _ = out[(nTokens-1)*ld+width-1], q[(nTokens-1)*ld+width-1]
	_, _ = k[nPos*stride-1], v[nPos*stride-1]
	sc := attnbBufs.Get().(*attnbScratch)
	defer attnbBufs.Put(sc)
	sc.qt = attnbGrow(sc.qt, 2*attnbRows*headDim)
	sc.s = attnbGrow(sc.s, 2*attnbRows*nPos)
	sc.o = attnbGrow(sc.o, attnbRows*headDim)
	group := nHeads / nKVHeads
	rows := nTokens * group
	b := blocks{rc: rc, ws: ws, sc: sc, out: out, q: q, ld: ld, v: v, headDim: headDim, group: group,
		rows: rows, stride: stride, pos0: pos0, scale: scale}
	qt0, qt1 := sc.qt[:attnbRows*headDim], sc.qt[attnbRows*headDim:]
	s0, s1 := sc.s[:attnbRows*nPos], sc.s[attnbRows*nPos:]
	var lim0, lim1 [attnbRows]int // positions each lane's row sees
	for g := range nKVHeads {
		for r0 := 0; r0 < rows; {
			nr := b.load(qt0, &lim0, g, r0)
			n0 := lim0[attnbRows-1]
			if pairs && rows-r0 >= 2*attnbRows && n0 >= 8 {
				b.load(qt1, &lim1, g, r0+attnbRows)
				n1 := lim1[attnbRows-1]
				attnbScores32(&s0[0], &s1[0], &qt0[0], &qt1[0], &k[g*headDim], 4*stride, headDim, n1)
				b.finish(s0[:n0*attnbRows], &lim0, g, r0, attnbRows)
				b.finish(s1[:n1*attnbRows], &lim1, g, r0+attnbRows, attnbRows)
				r0 += 2 * attnbRows
				continue
			}
			attnbScores16(&s0[0], &qt0[0], &k[g*headDim], 4*stride, headDim, n0)
			b.finish(s0[:n0*attnbRows], &lim0, g, r0, nr)
			r0 += attnbRows
		}
	}
}

// blocks is one call of attentionBlocks: its arguments and scratch.
type blocks struct {
	rc                 cacheRounding
	ws                 weightedSum
	sc                 *attnbScratch
	out, q, v          []float32
	ld, headDim, group int
	rows, stride, pos0 int
	scale              float32
}

// load transposes the block of query rows from r0 of KV head g — (token,
// head) pairs, token-major — into qt, one row per lane, and sets the
// positions each lane's row sees; it returns the rows it holds. Lanes past
// the last row are padding: zero queries, masked like the last row, their
// outputs dropped.
func (b *blocks) load(qt []float32, lim *[attnbRows]int, g, r0 int) int {
	hd, group := b.headDim, b.group
	nr := min(attnbRows, b.rows-r0)
	for l := range nr {
		r := r0 + l
		lim[l] = b.pos0 + r/group + 1
		off := r/group*b.ld + (g*group+r%group)*hd
		for i, x := range b.q[off : off+hd] {
			if b.rc.query != nil {
				qt[i*attnbRows+l] = b.rc.query(x)
			} else {
				qt[i*attnbRows+l] = x * b.scale
			}
		}
	}
	for l := nr; l < attnbRows; l++ {
		lim[l] = lim[nr-1]
		for i := range hd {
			qt[i*attnbRows+l] = 0
		}
	}
	return nr
}

// finish takes a block's scores s over the positions its last row sees
// (len(s)/16) to its outputs: the causal mask on the ragged tail, the
// per-lane softmax, a 16-bit cache's rounding of the probabilities, the
// pass over the values, and its nr rows copied out.
func (b *blocks) finish(s []float32, lim *[attnbRows]int, g, r0, nr int) {
	sc, hd, group := b.sc, b.headDim, b.group
	negInf := float32(math.Inf(-1))
	nLo, n := lim[0], len(s)/attnbRows
	if b.rc.query != nil {
		attnbScale16(&s[0], n, b.scale)
	}
	for t := nLo; t < n; t++ {
		for l, m := range lim {
			if t >= m {
				s[t*attnbRows+l] = negInf
			}
		}
	}
	attnbSoftmax16(&s[0], n, &sc.inv[0])
	for t := nLo; t < n; t++ {
		for l, m := range lim {
			if t >= m {
				s[t*attnbRows+l] = 0
			}
		}
	}
	if b.rc.query != nil {
		// Normalize, then round: the weighted sum then takes p as is.
		b.rc.probs(&s[0], n, &sc.inv[0])
		sc.inv = unitScales
	}
	o := sc.o
	b.ws(&o[0], &s[0], &b.v[g*hd], 4*b.stride, hd, n, &sc.inv[0])
	for l := range nr {
		r := r0 + l
		off := r/group*b.ld + (g*group+r%group)*hd
		copy(b.out[off:off+hd], o[l*hd:(l+1)*hd])
	}
}

func init() {
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "avx512-bf16", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Precision: ledger.PrecisionBF16, Impl: ledger.AttentionBatch(AttentionBatchBF16),
		Notes: "the avx512 blocks with the roundings of llama.cpp's graph over a bf16 KV cache (queries rounded unscaled, scale on the " +
			"float32 scores, probabilities normalized then rounded): a BF16 cache's attention where AMX is absent, and its decode"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "avx512-f16", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Precision: ledger.PrecisionF16, Impl: ledger.AttentionBatch(AttentionBatchF16),
		Notes: "avx512-bf16 for an F16 KV cache: queries and probabilities rounded to IEEE half (VCVTPS2PH)"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "avx512-ws8x2", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Impl: ledger.AttentionBatch(AttentionBatchWS),
		Notes: "avx512 with the pass over V in register tiles of 8 rows × 32 columns (2 value loads and 8 broadcasts per 16 FMAs, " +
			"against 1 load and 16 broadcasts); bit for bit avx512's; head sizes not a multiple of 32 take avx512's pass. Level with avx512 " +
			"on the dev VM (AMD Zen 5, 3B shapes, 10 runs, 20261130T022102Z-617d6d: -3% to +3%); not yet timed on Intel, whose two load ports " +
			"are where avx512's 17 loads per 16 FMAs would bind"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "avx512-s32", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Impl: ledger.AttentionBatch(AttentionBatchS32),
		Notes: "avx512 with two 16-row blocks' scores in one pass over the keys (attnbScores32: 4 positions × 2 blocks, 2 query loads " +
			"and 4 broadcasts per 8 FMAs against 1 and 8; each key row read once per 32 rows); bit for bit avx512's"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "avx512-ws8x2-s32", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Impl: ledger.AttentionBatch(AttentionBatchWSS32),
		Notes: "avx512-s32's scores with avx512-ws8x2's pass over the values; bit for bit avx512's"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "avx512", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Impl: ledger.AttentionBatch(AttentionBatch),
		Notes: "per KV head, 16 query rows (token, head) in the lanes: scores 8 positions at a time with broadcast key elements, " +
			"per-lane softmax, one pass over V for all 16 rows; each K/V row read once per 16 query rows"})
}
