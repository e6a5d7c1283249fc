//go:build !noasm

package avx512

import (
	"fmt"
	"strings"
	"sync"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

// rowKernel is the shape of the one-row-at-a-time K-quant assembly kernels:
// rows rows of nb super-blocks each, written to dst[0:rows].
type rowKernel func(dst *float32, rows int, w, xq *byte, nb int)

// fourRows runs a four-rows-per-pass kernel over dst (blockBytes per
// super-block of a weight row). Every row goes through the four-row kernel,
// whose sums round in another order than the one-row kernels', so a row's
// value does not depend on how a call's rows are split: the last len(dst)%4
// rows are recomputed in the pass over the last four rows, and a call of
// fewer than four rows runs on a copy padded with its last row.
func fourRows(four rowKernel, blockBytes int, dst []float32, w, xq []byte, k int) {
	n := len(dst)
	if n == 0 || k < 256 {
		clear(dst)
		return
	}
	nb := k / 256
	rb := nb * blockBytes
	n4 := n &^ 3
	if n4 > 0 {
		four(&dst[0], n4, &w[0], &xq[0], nb)
	}
	if n4 == n {
		return
	}
	var sums [4]float32
	if n >= 4 {
		four(&sums[0], 4, &w[(n-4)*rb], &xq[0], nb)
		copy(dst[n4:], sums[4-(n-n4):])
		return
	}
	fourRowsPadded(four, rb, dst, w, xq, nb)
}

// padPool holds the padded copies of fourRowsPadded (a decode step's last
// chunk of a matrix can be under four rows).
var padPool = sync.Pool{New: func() any { return new([]byte) }}

// fourRowsPadded runs four over the n < 4 rows of w (rb bytes each) padded
// to four with copies of the last row, into dst[:n].
func fourRowsPadded(four rowKernel, rb int, dst []float32, w, xq []byte, nb int) {
	n := len(dst)
	p := padPool.Get().(*[]byte)
	pad := (*p)[:0]
	for i := range 4 {
		r := min(i, n-1)
		pad = append(pad, w[r*rb:(r+1)*rb]...)
	}
	var sums [4]float32
	four(&sums[0], 4, &pad[0], &xq[0], nb)
	copy(dst, sums[:n])
	*p = pad
	padPool.Put(p)
}

//go:noescape
func q4kRowsAVX512(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q4kRowsVNNI(dst *float32, rows int, w, xq *byte, nb int)

var (
	// MatVecQ4K computes dst[r] = W[r]·x for Q4_K weights and Q8_K
	// activations with AVX-512BW (VPMADDUBSW, VPMADDWD).
	MatVecQ4K = rowops.BlockMatVec(q4kRowsAVX512, 256)
	// MatVecQ4KVNNI is MatVecQ4K with the scale multiply-accumulate done by
	// AVX512-VNNI's VPDPWSSD.
	MatVecQ4KVNNI = rowops.BlockMatVec(q4kRowsVNNI, 256)
)

//go:noescape
func q4kRows4VNNI(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ4K4VNNI is MatVecQ4KVNNI taking four rows per pass, so the
// activation loads and loop overhead are shared (fourRows).
func MatVecQ4K4VNNI(dst []float32, w, xq []byte, k int) {
	fourRows(q4kRows4VNNI, 144, dst, w, xq, k)
}

//go:noescape
func q4kRowsVNNIPrefetch(dst *float32, rows int, w, xq *byte, nb, dist int)

// q4kRowsVNNIPrefetchT2 is q4kRowsVNNIPrefetch with PREFETCHT2.
//
//go:noescape
func q4kRowsVNNIPrefetchT2(dst *float32, rows int, w, xq *byte, nb, dist int)

// q4kRowsVNNIPrefetchNTA is q4kRowsVNNIPrefetch with PREFETCHNTA.
//
//go:noescape
func q4kRowsVNNIPrefetchNTA(dst *float32, rows int, w, xq *byte, nb, dist int)

// q4kRowsVNNIPrefetchPage is q4kRowsVNNIPrefetch prefetching only four
// lines at each 4 KiB page boundary the window dist bytes ahead reaches.
//
//go:noescape
func q4kRowsVNNIPrefetchPage(dst *float32, rows int, w, xq *byte, nb, dist int)

// MatVecQ4KVNNIPrefetch is MatVecQ4KVNNI with software prefetches 2 KiB
// ahead of the weights.
var MatVecQ4KVNNIPrefetch = matVecPrefetch(q4kRowsVNNIPrefetch, 2048)

// prefetchRowKernel is a rowKernel that prefetches dist bytes ahead of the
// weights.
type prefetchRowKernel func(dst *float32, rows int, w, xq *byte, nb, dist int)

// matVecPrefetch returns the MatVec of kernel with its prefetches dist bytes
// ahead (the closures are made once, so calls allocate nothing).
func matVecPrefetch(kernel prefetchRowKernel, dist int) ledger.MatVec {
	rows := func(dst *float32, n int, w, xq *byte, nb int) { kernel(dst, n, w, xq, nb, dist) }
	return func(dst []float32, w, xq []byte, k int) { rowops.Blocks(rows, 256, dst, w, xq, k) }
}

// matVecPrefetchStreams is matVecPrefetch reading a call's rows as s
// streams at once: the rows cut into s equal runs, the kernel called a row
// at a time from each run in turn, so a core has s weight streams in
// flight instead of one (each with its prefetches dist bytes ahead). The
// same rows and sums as matVecPrefetch: only the order rows are taken in.
func matVecPrefetchStreams(kernel prefetchRowKernel, dist, s int) ledger.MatVec {
	return func(dst []float32, w, xq []byte, k int) {
		n := len(dst)
		if n < 2*s || k < 256 {
			rowops.Blocks(func(dst *float32, n int, w, xq *byte, nb int) { kernel(dst, n, w, xq, nb, dist) }, 256, dst, w, xq, k)
			return
		}
		nb, rb := k/256, len(w)/n
		run := (n + s - 1) / s
		for i := range run {
			for j := range s {
				if r := j*run + i; r < n {
					kernel(&dst[r], 1, &w[r*rb], &xq[0], nb, dist)
				}
			}
		}
	}
}

// registerMatVec registers impl as matvec/t's variant name, of the
// AVX512-VNNI family where name starts with avx512-vnni, else of AVX-512.
func registerMatVec(t quant.Type, name string, impl ledger.MatVec, notes string) {
	family, features := ledger.FamilyAVX512, []string{"avx512f", "avx512bw", "avx512vl", "f16c"}
	if strings.HasPrefix(name, "avx512-vnni") {
		family, features = ledger.FamilyAVX512VNNI, []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"}
	}
	ledger.Register(ledger.Variant{Op: ledger.MatVecOp(t), Name: name, Family: family, Features: features, Impl: impl, Notes: notes})
}

// registerPrefetchSweep registers kernel as matvec/t's avx512-vnni-pfNk at
// each distance of the sweep made for the Intel cores, where decode trailed,
// and its PREFETCHT2 and PREFETCHNTA twins (t2, nta) as avx512-vnni-pfNk-t2
// and -nta at 4 and 8 KiB, and its page form (page) as avx512-vnni-pgNk at
// 4, 8 and 16 KiB, experiments for those cores at 2 threads (issue 20).
func registerPrefetchSweep(t quant.Type, kernel, t2, nta, page prefetchRowKernel) {
	reg := func(name string, k prefetchRowKernel, kib int, notes string) {
		registerMatVec(t, name, matVecPrefetch(k, kib<<10), notes)
	}
	for _, kib := range []int{1, 4, 8, 16, 32} {
		reg(fmt.Sprintf("avx512-vnni-pf%dk", kib), kernel, kib,
			fmt.Sprintf("avx512-vnni-prefetch with the prefetches %d KiB ahead (a distance sweep for the Intel cores, where decode trails)", kib))
	}
	for _, h := range []struct {
		suffix string
		kernel prefetchRowKernel
		why    string
	}{
		{"t2", t2, "PREFETCHT2 (a hint to fill L2 and not L1)"},
		{"nta", nta, "PREFETCHNTA (the non-temporal hint: a weight stream read once a token)"},
	} {
		for _, kib := range []int{4, 8} {
			reg(fmt.Sprintf("avx512-vnni-pf%dk-%s", kib, h.suffix), h.kernel, kib,
				fmt.Sprintf("avx512-vnni-pf%dk with %s instead of PREFETCHT0; otherwise the same kernel (an experiment for the Intel cores at 2 threads, issue 20)", kib, h.why))
		}
	}
	for _, kib := range []int{4, 8} {
		for _, st := range []int{2, 4} {
			registerMatVec(t, fmt.Sprintf("avx512-vnni-pf%dk-%ds", kib, st), matVecPrefetchStreams(kernel, kib<<10, st),
				fmt.Sprintf("avx512-vnni-pf%dk with a call's rows read as %d streams at once (cut into %d runs, a row from each in turn): more independent weight streams a core for the Intel cores at 2 threads, whose decode kernels lack memory-level parallelism (issue 20). Level on the lent Intel host at 2 threads (run 20261203T164819Z-0e6e86, 6 runs, 3B shapes): 69-81%% of the huge-page probe against pf4k/pf8k's 70-95%%, no shape won outside the noise; kept as a loser", kib, st, st))
		}
	}
	for _, kib := range []int{4, 8, 16} {
		reg(fmt.Sprintf("avx512-vnni-pg%dk", kib), page, kib,
			fmt.Sprintf("avx512-vnni-pf%dk with prefetches only where the window crosses into a new 4 KiB page (four lines at the boundary, about 4 a page instead of ~85): the L2 streamer stops at page boundaries and this restarts it, without holding L1 fill buffers for lines it fetches anyway; an experiment for the Intel cores at 2 threads (issue 20)", kib))
	}
}

func init() {
	registerMatVec(quant.Q4_K, "avx512", MatVecQ4K,
		"one row at a time; VPMADDUBSW nibbles×activations, VPMADDWD by VPSHUFB-spread sub-block scales, mins from bsums")
	registerMatVec(quant.Q4_K, "avx512-vnni", MatVecQ4KVNNI,
		"as avx512, with VPDPWSSD folding the scale multiply and the accumulate")
	registerMatVec(quant.Q4_K, "avx512-vnni-4row", MatVecQ4K4VNNI,
		"as avx512-vnni, four rows per pass sharing activation loads; scales unpacked in XMM; mins folded into one accumulator. A first interleaved ledger run on the shared 2-vCPU VM had it slower than one row on the large shapes (four interleaved weight streams), level on cache-resident ones")
	registerMatVec(quant.Q4_K, "avx512-vnni-prefetch", MatVecQ4KVNNIPrefetch,
		"as avx512-vnni, with PREFETCHT0 2 KiB ahead of the weight stream (crosses 4 KiB pages, where the hardware prefetcher stops)")
	registerPrefetchSweep(quant.Q4_K, q4kRowsVNNIPrefetch, q4kRowsVNNIPrefetchT2, q4kRowsVNNIPrefetchNTA, q4kRowsVNNIPrefetchPage)
}
