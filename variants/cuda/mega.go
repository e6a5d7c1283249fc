package cuda

import (
	"fmt"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The decode megakernel's matvec alone (mega.cu mmv): the ledger's
// cuda-mega. The megakernel itself is PersistentShape.Mega (an engine
// configuration, as the persistent kernel is).

// megaMatVec enqueues mmv: dst[r] = W[r]·x, each block's contiguous rows
// streamed through a ring in its shared memory, a warp a row.
func (r *gpu) megaMatVec(t *cu.Thread, s cu.Stream, f *format, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
	return r.megaRows(t, s, 1, f, dst, w, rows, x, k)
}

// megaMatVec2 is mmv2: two rows a warp.
func (r *gpu) megaMatVec2(t *cu.Thread, s cu.Stream, f *format, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
	return r.megaRows(t, s, 2, f, dst, w, rows, x, k)
}

func (r *gpu) megaRows(t *cu.Thread, s cu.Stream, nr int, f *format, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
	qt, xb, err := r.lazyMatVec(t, megaFile, f, k)
	if err != nil {
		return err
	}
	ringAt := (xb + 16 + 15) &^ 15
	ringFor := func(name string) int { return (r.dev.SharedOptin - r.info[name].StaticShared - ringAt) &^ 15 }
	if nr == 2 && ringFor("mmv2") < 3*2*megaUnits*f.devRow(k) {
		// Rows too long for three rounds of 16 in the ring (Q6_K and Q8_0
		// at k = 8192 on the H200): cuda-mega2 takes a row a warp there,
		// the same sums (both are cuda's).
		nr = 1
	}
	name := map[int]string{1: "mmv", 2: "mmv2"}[nr]
	fn := r.fns[name]
	ring := ringFor(name)
	if need := 3 * nr * megaUnits * f.devRow(k); ring < need {
		return fmt.Errorf("cuda-mega: %d rows of %d values need a ring of %d bytes, %d bytes of shared memory left", nr*megaUnits, k, need, ring)
	}
	if err := t.SetMaxDynamicShared(fn, ringAt+ring); err != nil {
		return fmt.Errorf("cuda-mega: %w", err)
	}
	blocks := min(r.dev.SMs, rows)
	return t.Launch(fn, cu.D1(blocks), cu.D1(persistThreads), ringAt+ring, s,
		dst.Arg(), w.Arg(), cu.I32(rows), x.Arg(), cu.I32(k), cu.I32(fmtCode[f.wt]), cu.I32(qt), cu.I32(ringAt), cu.I32(ring))
}

// registerMega registers cuda-mega (from register.go's init).
func registerMega() {
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(wt), Name: "cuda-mega", Family: ledger.FamilyCUDA, Features: []string{Feature},
			Impl:  hostMatVec(formats[wt], (*gpu).megaMatVec),
			Notes: "the decode megakernel's matvec (mega.cu mmv): one block of 256 threads a multiprocessor, each a contiguous slice of the rows streamed by cp.async into a ring in its shared memory (rounds of 8 rows, as far ahead as the ring holds), a warp a row read from there; the lanes' sums are cuda's" + hostNote})
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(wt), Name: "cuda-mega2", Family: ledger.FamilyCUDA, Features: []string{Feature},
			Impl:  hostMatVec(formats[wt], (*gpu).megaMatVec2),
			Notes: "cuda-mega with two rows a warp (rounds of 16 rows), their shared-memory loads and sums interleaved (a row a warp, mmv, where three rounds of 16 rows do not fit the ring: Q6_K and Q8_0 at k = 8192 on the H200); the lanes' sums are cuda's" + hostNote})
	}
}
