//go:build !noasm

package avx512

import (
	"math"
	"sync"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/model/quant"
)

//go:noescape
func attnbScores16(s, qt, k *float32, stride, headDim, n int)

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
	attentionBlocks(float32Cache, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
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
	if nTokens != 1 || nHeads <= 0 || headDim <= 0 {
		attentionBlocks(rc, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
		return
	}
	nCtx, stride := pos0+1, nKVHeads*headDim
	_, _, _, _ = out[nHeads*headDim-1], q[nHeads*headDim-1], k[nCtx*stride-1], v[nCtx*stride-1]
	buf, p, q4, o4 := gqaScratch(nCtx, headDim)
	defer scoreBufs.Put(buf)
	ones := [attnbRows]float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	group := nHeads / nKVHeads
	for g := range nKVHeads {
		off := g * headDim
		for h0 := g * group; h0 < (g+1)*group; h0 += 4 {
			n := min(4, (g+1)*group-h0)
			for i, x := range q[h0*headDim : (h0+n)*headDim] {
				q4[i] = rc.query(x)
			}
			clear(q4[n*headDim:])
			attnScores4AVX512(&p[0], &q4[0], &k[off], 4*stride, headDim, nCtx, scale)
			for j := range n {
				pj := p[j*nCtx : (j+1)*nCtx]
				softmaxAVX512(&pj[0], nCtx)
				// Round the probabilities: whole vectors in assembly, the tail here.
				if full := nCtx / attnbRows; full > 0 {
					rc.probs(&pj[0], full, &ones[0])
				}
				for t := nCtx / attnbRows * attnbRows; t < nCtx; t++ {
					pj[t] = rc.query(pj[t])
				}
			}
			attnWeightedSum4AVX512(&o4[0], &p[0], &v[off], 4*stride, headDim, nCtx)
			copy(out[h0*headDim:(h0+n)*headDim], o4[:n*headDim])
		}
	}
}

// cacheRounding is the arithmetic of the blocks: float32, or a 16-bit
// cache's roundings (queries and probabilities rounded to its type).
type cacheRounding struct {
	query func(float32) float32                 // nil: float32
	probs func(s *float32, n int, inv *float32) // normalize and round
}

var (
	float32Cache = cacheRounding{}
	bf16Cache    = cacheRounding{roundBF16, attnbRoundP16}
	f16Cache     = cacheRounding{roundF16, attnbRoundP16F16}
)

// roundBF16 is x rounded to bfloat16 (to nearest even), as a float32.
func roundBF16(x float32) float32 { return quant.BF16ToFloat32(quant.Float32ToBF16(x)) }

// roundF16 is x rounded to IEEE half (to nearest even), as a float32.
func roundF16(x float32) float32 { return quant.FP16ToFloat32(quant.Float32ToFP16(x)) }

// attentionBlocks runs the sixteen-row blocks of every KV head, in float32
// or with a 16-bit cache's roundings.
func attentionBlocks(rc cacheRounding, out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens <= 0 || nHeads <= 0 || headDim <= 0 {
		return
	}
	width, stride, nPos := nHeads*headDim, nKVHeads*headDim, pos0+nTokens
	_, _ = out[(nTokens-1)*ld+width-1], q[(nTokens-1)*ld+width-1]
	_, _ = k[nPos*stride-1], v[nPos*stride-1]
	sc := attnbBufs.Get().(*attnbScratch)
	defer attnbBufs.Put(sc)
	sc.qt = attnbGrow(sc.qt, attnbRows*headDim)
	sc.s = attnbGrow(sc.s, attnbRows*nPos)
	sc.o = attnbGrow(sc.o, attnbRows*headDim)
	qt, o := sc.qt, sc.o
	negInf := float32(math.Inf(-1))
	group := nHeads / nKVHeads
	rows := nTokens * group
	var lim [attnbRows]int // positions each lane's row sees
	for g := range nKVHeads {
		for r0 := 0; r0 < rows; r0 += attnbRows {
			nr := min(attnbRows, rows-r0)
			for l := range nr {
				r := r0 + l
				lim[l] = pos0 + r/group + 1
				off := r/group*ld + (g*group+r%group)*headDim
				for i, x := range q[off : off+headDim] {
					if rc.query != nil {
						qt[i*attnbRows+l] = rc.query(x)
					} else {
						qt[i*attnbRows+l] = x * scale
					}
				}
			}
			for l := nr; l < attnbRows; l++ {
				// Padding lanes: zero queries, masked like the last row;
				// their outputs are dropped.
				lim[l] = lim[nr-1]
				for i := range headDim {
					qt[i*attnbRows+l] = 0
				}
			}
			nLo, n := lim[0], lim[attnbRows-1]
			s := sc.s[:n*attnbRows]
			attnbScores16(&s[0], &qt[0], &k[g*headDim], 4*stride, headDim, n)
			if rc.query != nil {
				attnbScale16(&s[0], n, scale)
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
			if rc.query != nil {
				// Normalize, then round: the weighted sum then takes p as is.
				rc.probs(&s[0], n, &sc.inv[0])
				sc.inv = [attnbRows]float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
			}
			attnbWeightedSum16(&o[0], &s[0], &v[g*headDim], 4*stride, headDim, n, &sc.inv[0])
			for l := range nr {
				r := r0 + l
				off := r/group*ld + (g*group+r%group)*headDim
				copy(out[off:off+headDim], o[l*headDim:(l+1)*headDim])
			}
		}
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
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "avx512", Family: ledger.FamilyAVX512,
		Features: []string{"avx512f", "avx512vl"}, Impl: ledger.AttentionBatch(AttentionBatch),
		Notes: "per KV head, 16 query rows (token, head) in the lanes: scores 8 positions at a time with broadcast key elements, " +
			"per-lane softmax, one pass over V for all 16 rows; each K/V row read once per 16 query rows"})
}
