//go:build !noasm

package amx

import (
	"sync"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// Prefill attention as two tile products per 16 query rows, in AMX-BF16:
// S = Q·Kᵀ, a float32 softmax per row, then O = P·V. Each call converts its
// KV head's cached keys and values once into bf16 panels laid out as B
// tiles want them (the keys transposed by dimension pairs, the values
// interleaved by position pairs), so the engine should hand it whole
// batches per KV head, not slices of one.
//
// Panels: the K panel holds per 16-position block hd/32 tiles of [16 dim
// pairs][16 positions][2 bf16]; the V panel per 32-position step one row of
// hd dimension pairs per position pair: [16 position pairs][hd][2 bf16].
// Positions past the cache are zero in both.

// attnArgs is what the two tile programs read (offsets in attn_amd64.s).
type attnArgs struct {
	q       *byte    // 16 query rows, bf16, hd*2 bytes apart
	kp      *byte    // K panel
	s       *float32 // scores, sStride bytes apart
	sStride int
	steps   int   // 32-position steps to compute
	ksteps  int   // hd/32
	p       *byte // probabilities, bf16, pStride bytes apart
	pStride int
	vp      *byte // V panel
	hd      int
	o       *float32 // output, [16][hd] float32
	cfg     *byte
	qStride int // bytes between query rows (2·hd, or 6·hd split)
}

//go:noescape
func attnScoresAMX(a *attnArgs)

//go:noescape
func attnPVAMX(a *attnArgs)

//go:noescape
func cvtBF16Scaled(dst *uint16, src *float32, n int, scale float32)

//go:noescape
func cvtBF16Split(hi, lo *uint16, src *float32, n int, scale float32)

//go:noescape
func interleaveBF16(dst *uint32, a, b *float32, n int)

//go:noescape
func softmaxBF16(p *uint16, s *float32, n, npad int, scale float32)

//go:noescape
func softmaxBF16Split(hi, lo *uint16, s *float32, n, npad int, scale float32)

//go:noescape
func interleaveBF16Split(hi, lo *uint32, a, b *float32, n int)

// attnSplit is how far the tile driver splits its operands into bf16 pairs
// hi + lo (about 16 significant bits where one bf16 has 8).
type attnSplit int

const (
	splitNone   attnSplit = iota // every operand one bf16: amx-bf16
	splitScores                  // S = Qhi·Khi + Qlo·Khi + Qhi·Klo: amx-bf16x3
	// splitAll splits P·V too: O = Phi·Vhi + Phi·Vlo + Plo·Vhi, three
	// calls of the P·V program (amx-bf16-split).
	splitAll
)

// attnTiles are the two tile programs of the attention; the tests run the
// same driver on plain-Go emulations of them.
type attnTiles struct{ scores, pv func(*attnArgs) }

var amxAttnTiles = attnTiles{scores: attnScoresAMX, pv: attnPVAMX}

const (
	attnRows = 16 // query rows per tile program
	attnStep = 32 // positions per step (a bf16 tile's k)
)

// attnScratch holds one call's panels and buffers, 64-byte aligned.
type attnScratch struct {
	kp, vp, qb, pb, sb, ob, row, zero []byte
}

var attnScratches = sync.Pool{New: func() any { return new(attnScratch) }}

// attnTilesFit reports whether the tile programs cover head size hd: the
// scores program keeps all of Q's chunks in tiles (at most four), the P·V
// program takes dimensions 64 at a time.
func attnTilesFit(hd int) bool { return hd == 64 || hd == 128 }

// AttentionBatchBF16 is causal attention for a batch of query tokens
// (ledger.AttentionBatch's contract) on AMX-BF16 tiles with the roundings
// of llama.cpp's graph over a bf16 KV cache: queries (unscaled), keys,
// values and probabilities rounded to bf16, products and the scaled
// softmax in float32. Head sizes other than 64 and 128, single tokens, and
// machines where the OS refuses AMX go to avx512.AttentionBatchBF16, the
// same arithmetic on AVX-512.
func AttentionBatchBF16(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionAMX(splitNone, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchBF16x3 is AttentionBatchBF16 with the scores from split
// operands: each query and key value as a bf16 pair hi + lo, and S =
// Qhi·Khi + Qlo·Khi + Qhi·Klo (three tile products, about 16 significant
// bits), because the softmax turns a score's absolute error into the
// probability's relative error. P·V stays single bf16.
func AttentionBatchBF16x3(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionAMX(splitScores, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// AttentionBatchSplit is causal attention over a float32 cache on AMX-BF16
// tiles with every operand a bf16 pair hi + lo: the scores as in
// AttentionBatchBF16x3, then O = Phi·Vhi + Phi·Vlo + Plo·Vhi, so both
// products carry about 16 significant bits (the dropped lo·lo terms are
// 2^-16 of each product). Single tokens, head sizes other than 64 and 128
// and machines without AMX go to avx512.AttentionBatch (float32).
func AttentionBatchSplit(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens < 2 || !attnTilesFit(headDim) || cpufeat.AMX() != nil {
		avx512.AttentionBatch(out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
		return
	}
	attentionTiles(amxAttnTiles, splitAll, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

func attentionAMX(split attnSplit, out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens < 2 || !attnTilesFit(headDim) || cpufeat.AMX() != nil {
		avx512.AttentionBatchBF16(out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
		return
	}
	attentionTiles(amxAttnTiles, split, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// attentionTiles drives tiles over every KV head: the head's panels, then
// per query head 16 tokens at a time the scores, the row softmaxes (each
// token sees the positions up to its own) and the weighted sum. With split,
// query rows are [hi | lo | hi] and key rows [hi | hi | lo] (3·hd values),
// so one product over 3·hd gives the three terms of the split scores.
func attentionTiles(tiles attnTiles, split attnSplit, out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, hd, pos0 int, scale float32) {
	width, stride, nPos := nHeads*hd, nKVHeads*hd, pos0+nTokens
	_, _ = out[(nTokens-1)*ld+width-1], q[(nTokens-1)*ld+width-1]
	_, _ = k[nPos*stride-1], v[nPos*stride-1]
	group := nHeads / nKVHeads
	npad := (nPos + attnStep - 1) / attnStep * attnStep
	qk := hd // values per query/key row of the scores product
	if split != splitNone {
		qk = 3 * hd
	}
	panels := 1 // V panels: hi, and with splitAll lo; probabilities the same
	if split == splitAll {
		panels = 2
	}
	ks := qk / 32

	sc := attnScratches.Get().(*attnScratch)
	defer attnScratches.Put(sc)
	sc.kp = aligned(sc.kp, npad*qk*2)
	sc.vp = aligned(sc.vp, panels*npad*hd*2)
	sc.qb = aligned(sc.qb, attnRows*qk*2)
	sc.pb = aligned(sc.pb, panels*attnRows*npad*2)
	sc.sb = aligned(sc.sb, attnRows*npad*4)
	sc.ob = aligned(sc.ob, panels*attnRows*hd*4)
	sc.row = aligned(sc.row, qk*2)
	sc.zero = aligned(sc.zero, hd*4)
	clear(sc.zero)
	kp := unsafe.Slice((*uint32)(unsafe.Pointer(&sc.kp[0])), npad*qk/2)
	vp := unsafe.Slice((*uint32)(unsafe.Pointer(&sc.vp[0])), panels*npad*hd/2)
	row16 := unsafe.Slice((*uint16)(unsafe.Pointer(&sc.row[0])), qk)
	row := unsafe.Slice((*uint32)(unsafe.Pointer(&sc.row[0])), qk/2)
	zero := unsafe.Slice((*float32)(unsafe.Pointer(&sc.zero[0])), hd)
	qb := unsafe.Slice((*uint16)(unsafe.Pointer(&sc.qb[0])), attnRows*qk)
	pb := unsafe.Slice((*uint16)(unsafe.Pointer(&sc.pb[0])), panels*attnRows*npad)
	s := unsafe.Slice((*float32)(unsafe.Pointer(&sc.sb[0])), attnRows*npad)
	o := unsafe.Slice((*float32)(unsafe.Pointer(&sc.ob[0])), panels*attnRows*hd)
	pLo, vpLo, oLo := attnRows*npad, npad*hd/2, o[attnRows*hd:] // splitAll's second halves
	a := attnArgs{q: &sc.qb[0], qStride: qk * 2, kp: &sc.kp[0], s: &s[0], sStride: npad * 4, ksteps: ks,
		p: &sc.pb[0], pStride: npad * 2, vp: &sc.vp[0], hd: hd, o: &o[0], cfg: &tileConfig[0]}

	// toBF16 writes x·scale as one bf16 row of hd values, or split as
	// [hi | lo | hi] (queries) or [hi | hi | lo] (keys).
	toBF16 := func(dst []uint16, x *float32, scale float32, key bool) {
		if split == splitNone {
			cvtBF16Scaled(&dst[0], x, hd, scale)
			return
		}
		lo := 2 * hd
		if !key {
			lo = hd
		}
		cvtBF16Split(&dst[0], &dst[lo], x, hd, scale)
		copy(dst[3*hd-lo:], dst[:hd])
	}
	for g := range nKVHeads {
		// K panel: dword i of position t's bf16 row (values 2i, 2i+1) goes
		// to row i%16 of tile i/16 of t's block, column t%16.
		clear(kp[nPos/16*ks*256:])
		for t := range nPos {
			toBF16(row16, &k[t*stride+g*hd], 1, true)
			base := t/16*ks*256 + t%16
			for i, d := range row {
				kp[base+16*i] = d
			}
		}
		// V panel: position pair i's row.
		for i := range npad / 2 {
			v0, v1 := zero, zero
			if t := 2 * i; t < nPos {
				v0 = v[t*stride+g*hd:]
			}
			if t := 2*i + 1; t < nPos {
				v1 = v[t*stride+g*hd:]
			}
			if split == splitAll {
				interleaveBF16Split(&vp[i*hd], &vp[vpLo+i*hd], &v0[0], &v1[0], hd)
			} else {
				interleaveBF16(&vp[i*hd], &v0[0], &v1[0], hd)
			}
		}
		for h := range group {
			hq := (g*group + h) * hd
			for j0 := 0; j0 < nTokens; j0 += attnRows {
				rows := min(attnRows, nTokens-j0)
				for r := range rows {
					toBF16(qb[r*qk:], &q[(j0+r)*ld+hq], 1, false)
				}
				clear(qb[rows*qk:])
				a.steps = (pos0 + j0 + rows + attnStep - 1) / attnStep
				tiles.scores(&a)
				seen := a.steps * attnStep
				for r := range rows {
					if split == splitAll {
						softmaxBF16Split(&pb[r*npad], &pb[pLo+r*npad], &s[r*npad], pos0+j0+r+1, seen, scale)
					} else {
						softmaxBF16(&pb[r*npad], &s[r*npad], pos0+j0+r+1, seen, scale)
					}
				}
				for r := rows; r < attnRows; r++ {
					clear(pb[r*npad : r*npad+seen])
					if split == splitAll {
						clear(pb[pLo+r*npad : pLo+r*npad+seen])
					}
				}
				tiles.pv(&a)
				if split == splitAll {
					// Phi·Vlo, then Plo·Vhi, each into oLo and added: the
					// P·V program stores its sums, it does not accumulate.
					a.vp, a.o = (*byte)(unsafe.Pointer(&vp[vpLo])), &oLo[0]
					tiles.pv(&a)
					addTo(o[:attnRows*hd], oLo[:attnRows*hd])
					a.vp, a.p = &sc.vp[0], (*byte)(unsafe.Pointer(&pb[pLo]))
					tiles.pv(&a)
					addTo(o[:attnRows*hd], oLo[:attnRows*hd])
					a.p, a.o = &sc.pb[0], &o[0]
				}
				for r := range rows {
					copy(out[(j0+r)*ld+hq:(j0+r)*ld+hq+hd], o[r*hd:(r+1)*hd])
				}
			}
		}
	}
}

// addTo adds src into dst.
func addTo(dst, src []float32) {
	for i, x := range src[:len(dst)] {
		dst[i] += x
	}
}

func init() {
	features := []string{"amx-bf16", "avx512f", "avx512bw", "avx512vl"}
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "amx-bf16", Family: ledger.FamilyAMXBF16,
		Features: features, Precision: ledger.PrecisionBF16, Impl: ledger.AttentionBatch(AttentionBatchBF16),
		Notes: "per KV head: keys and values converted once per call into bf16 B-tile panels; per query head 16 tokens at a time " +
			"S = Q·Kᵀ in TDPBF16PS (Q's chunks held in tiles), float32 softmax per row written as bf16, O = P·V in TDPBF16PS; " +
			"head sizes 64 and 128 (others, and single tokens, go to avx512-bf16). The arithmetic of llama.cpp's graph over a bf16 KV cache " +
			"(queries rounded unscaled, the scale applied to the float32 scores): the engine's prefill attention for a BF16 cache. " +
			"Gate NMSE ~1e-5. Over an F32 cache it would cost the engine its float32 agreement with llama.cpp (cosine 0.99934, " +
			"top-1 24/25 on the tiny synthetic Q4_K_M, where llama.cpp's own F16 cache gives 0.99951, 24/25)"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "amx-bf16-split", Family: ledger.FamilyAMXBF16,
		Features: features, Precision: ledger.PrecisionBF16, Status: ledger.Retired, Impl: ledger.AttentionBatch(AttentionBatchSplit),
		Notes: "a float32-class candidate for prefill attention on AMX-BF16 tiles (issue 19 item 3): every operand a bf16 pair hi + lo, " +
			"S = Qhi·Khi + Qlo·Khi + Qhi·Klo in one product over 3·hd as amx-bf16x3, a float32 softmax whose probabilities are split too, " +
			"O = Phi·Vhi + Phi·Vlo + Plo·Vhi in three calls of the P·V program. Emulated tiles: worst gate NMSE 4e-11 (amx-bf16 1.2e-5). " +
			"On the lent host (session 25): its AMX tests pass; 3B shapes (run 20261204T202931Z-006274) 2.2× slower than amx-bf16, against avx512 " +
			"1.17× slower at 64 queries from position 0 and 1.4-2.0× faster at positions 448 and 960; engine A/B at 3B pp1024, 8 rounds " +
			"(run 20261204T202933Z-df9bb0): +7.6 % (p 0.038), paired by round 1.068×. Not float32: a pair of bf16s carries about 16 bits, so each " +
			"product is off by about 2^-16, which the conformance suite's float32 bound refuses (one output of h32kv8d64n21pos50 at 6.64e-6 against " +
			"6.59e-6) and the engine's layer oracle too (with it forced, the tiny synthetic's layer 1 at cosine 0.99998869 against 1 - 1e-8); " +
			"float32 would take a three-way split (six products). Retired and classed bf16 (its gate's thresholds): the engine never picks it"})
	ledger.Register(ledger.Variant{Op: ledger.OpAttentionBatch, Name: "amx-bf16x3", Family: ledger.FamilyAMXBF16,
		Features: features, Precision: ledger.PrecisionBF16, Status: ledger.Retired, Impl: ledger.AttentionBatch(AttentionBatchBF16x3),
		Notes: "amx-bf16 with split scores: queries and keys as bf16 hi + lo, S = Qhi·Khi + Qlo·Khi + Qhi·Klo in one product over " +
			"3·hd (about 16 significant bits where the softmax needs them); P·V single bf16. Lost: 35-45% slower than amx-bf16 " +
			"and no closer to llama.cpp (cosine 0.99936, top-1 23/25 on the tiny synthetic), since P and V rounding alone move it as much. " +
			"Retired: its unrounded queries are not the bf16 cache's arithmetic (the conformance suite's naive-bf16 check put one output " +
			"of h24kv8d128n17pos100 1.1% of max|v| away on AMX, session 9), so the engine must not pick it for a bf16 cache"})
}
