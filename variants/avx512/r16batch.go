package avx512

import (
	"fmt"
	"slices"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// R16Dot is a whole-group kernel (groups of 16 rows, blocks of
// blockValues values, prefetching dist bytes ahead) as R16MatVec and
// R16Batch take it.
func R16Dot(dot func(w, x *byte, dst *float32, nb, groups, dist int), blockValues int) func(dst []float32, w, xr []byte, k, dist int) {
	return func(dst []float32, w, xr []byte, k, dist int) {
		if len(dst) > 0 {
			dot(&w[0], &xr[0], &dst[0], k/blockValues, len(dst)/Q4KR16Rows, dist)
		}
	}
}

// r16BlockBytes is the weights a block of the batched product holds: read
// from memory for the first token, from L2 for the others.
const r16BlockBytes = 128 << 10

// R16Batch is the batched decode product (matvec_batch) over layout
// lay (16 rows a group, blocks of blockValues values) from its matvec
// kernel dot: each block of rows of about r16BlockBytes of weights for
// every token in turn, a last partial group through a 16-value buffer.
// Each token's results are the matvec's.
func R16Batch(lay *ledger.WeightLayout, blockValues int, dot func(dst []float32, w, xr []byte, k, dist int), dist int) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
		if rows <= 0 || n <= 0 {
			return
		}
		const g = Q4KR16Rows
		act, gbytes := lay.ActBytes(k), lay.GroupBytes(k)
		step := max(1, r16BlockBytes/gbytes) * g
		full := rows / g * g
		for r0 := 0; r0 < full; r0 += step {
			r1 := min(full, r0+step)
			for j := range n {
				dot(dst[j*ldd+r0:j*ldd+r1], w[r0/g*gbytes:r1/g*gbytes], xr[j*act:][:act], k, dist)
			}
		}
		if full < rows {
			var tail [g]float32
			for j := range n {
				dot(tail[:], w[full/g*gbytes:], xr[j*act:][:act], k, dist)
				copy(dst[j*ldd+full:j*ldd+rows], tail[:])
			}
		}
	}
}

// A PrefetchForm is a registered interleaved matvec's prefetch: none
// (Dist 0), or every weight line Dist bytes ahead with PREFETCHT0, or
// PREFETCHNTA when NTA.
type PrefetchForm struct {
	Suffix string
	Dist   int
	NTA    bool
}

// An R16Family is whose interleaved kernels RegisterR16 registers: the
// variants' name before the form's suffix, family and CPU features.
type R16Family struct {
	Name     string
	Family   ledger.Family
	Features []string
}

// RegisterR16 registers a weight type's matvecs over its interleaved
// layout (blocks of blockValues values), one per form (t0 prefetching
// with PREFETCHT0, nta with PREFETCHNTA), and its batched products over
// the forms whose suffixes batch names.
func RegisterR16(fam R16Family, typ quant.Type, lay *ledger.WeightLayout, blockValues int, t0, nta func(w, x *byte, dst *float32, nb, groups, dist int),
	forms []PrefetchForm, batch []string, note string) {
	for _, f := range forms {
		kernel, how := t0, fmt.Sprintf("; every weight line prefetched %d KiB ahead (PREFETCHT0)", f.Dist>>10)
		if f.NTA {
			kernel, how = nta, fmt.Sprintf("; every weight line prefetched %d KiB ahead (PREFETCHNTA)", f.Dist>>10)
		}
		if f.Dist == 0 {
			how = ""
		}
		dot := R16Dot(kernel, blockValues)
		name := fam.Name + f.Suffix
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(typ), Name: name, Family: fam.Family,
			Features: fam.Features, Layout: lay, Impl: R16MatVec(lay, dot, f.Dist), Notes: note + how})
		if slices.Contains(batch, f.Suffix) {
			ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(typ), Name: name, Family: fam.Family,
				Features: fam.Features, Layout: lay, Impl: R16Batch(lay, blockValues, dot, f.Dist),
				Notes: ledger.MatVecOp(typ) + ":" + name + " for each token in turn over blocks of rows of about 128 KiB (from memory for the first token, from L2 for the others): " +
					"the batched decode product on the layout the matvec and the matmul read, so the model holds one copy; each token's results are the matvec's"})
		}
	}
}
