//go:build !noasm

package avx512

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The batched decode products (op matvec_batch, a Batch's rows): Q4_K and
// Q6_K weight rows read as stored — no repacking — against up to qbGroup
// tokens at once (q4kb_amd64.s, q6kb_amd64.s; see variants/_gen's
// avx512_kbatch.go). Each weight super-block is loaded and unpacked once
// for the group's tokens, the activations laid out once per call (or once
// per step for every worker, through the prepared form).

// Activation layout: tokens in groups of qbGroupSize(nb) (qbGroup, or fewer
// for long rows); group g (tg tokens, the last one possibly fewer) holds
// per super-block its tokens back to back, qbTok bytes each: the 256
// quants (for Q4_K in the chunk order that meets the nibble vectors), the
// 16 bsums at qbBsums, dx at qbD. A group of gs tokens takes nb·gs·qbTok
// bytes, and the layout starts on a cache line within its buffer.
const (
	qbTok   = 320
	qbBsums = 256
	qbD     = 288
	qbGroup = 8
	// qbChunkBytes bounds the weight rows one pass of the groups covers, so
	// that the groups after the first read them from L2.
	qbChunkBytes = 128 << 10
	// qbL1Bytes bounds the activations of one group, which one kernel
	// call streams for each weight row (rows of 8192 values: groups of
	// four tokens, 40 KiB). Zen 5, 2 vCPUs, one thread, weights in cache,
	// k = 8192: 3.2 ns per token and super-block-row with 6 or 8 tokens
	// a group, 2.1 with 4; k = 3072 (30 KiB for 8 tokens): 2.0.
	qbL1Bytes = 40 << 10
)

type (
	qbKernel   func(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)
	qbPfKernel func(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)
)

// The kernels of 1 … qbGroup tokens (generated), and their forms with
// software prefetches dist bytes ahead of the weights.

//go:noescape
func q4kBatch1(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatch2(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatch3(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatch4(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatch5(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatch6(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatch7(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatch8(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch1(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch2(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch3(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch4(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch5(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch6(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch7(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatch8(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q4kBatchP1(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q4kBatchP2(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q4kBatchP3(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q4kBatchP4(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q4kBatchP5(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q4kBatchP6(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q4kBatchP7(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q4kBatchP8(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q5kBatch1(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q5kBatch2(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q5kBatch3(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q5kBatch4(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q5kBatch5(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q5kBatch6(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q5kBatch7(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q5kBatch8(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)

//go:noescape
func q6kBatchP1(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q6kBatchP2(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q6kBatchP3(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q6kBatchP4(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q6kBatchP5(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q6kBatchP6(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q6kBatchP7(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

//go:noescape
func q6kBatchP8(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)

// A qbFormat is one weight type of the batched kernel.
type qbFormat struct {
	typ        quant.Type
	blockBytes int
	order      [8]int // 32-value activation chunk at each position
	kernels    [qbGroup]qbKernel
	pf         [qbGroup]qbPfKernel
}

var (
	qbQ4K = qbFormat{quant.Q4_K, 144, [8]int{0, 2, 1, 3, 4, 6, 5, 7},
		[qbGroup]qbKernel{q4kBatch1, q4kBatch2, q4kBatch3, q4kBatch4, q4kBatch5, q4kBatch6, q4kBatch7, q4kBatch8},
		[qbGroup]qbPfKernel{q4kBatchP1, q4kBatchP2, q4kBatchP3, q4kBatchP4, q4kBatchP5, q4kBatchP6, q4kBatchP7, q4kBatchP8}}
	// qbQ5K has no prefetching forms (pf): its variants run with dist 0.
	qbQ5K = qbFormat{quant.Q5_K, 176, [8]int{0, 2, 1, 3, 4, 6, 5, 7},
		[qbGroup]qbKernel{q5kBatch1, q5kBatch2, q5kBatch3, q5kBatch4, q5kBatch5, q5kBatch6, q5kBatch7, q5kBatch8},
		[qbGroup]qbPfKernel{}}
	qbQ6K = qbFormat{quant.Q6_K, 210, [8]int{0, 1, 2, 3, 4, 5, 6, 7},
		[qbGroup]qbKernel{q6kBatch1, q6kBatch2, q6kBatch3, q6kBatch4, q6kBatch5, q6kBatch6, q6kBatch7, q6kBatch8},
		[qbGroup]qbPfKernel{q6kBatchP1, q6kBatchP2, q6kBatchP3, q6kBatchP4, q6kBatchP5, q6kBatchP6, q6kBatchP7, q6kBatchP8}}
)

// qbSize is the bytes of the layout of n tokens of nb super-blocks, with
// room to start it on a cache line.
func qbSize(n, nb int) int {
	gs := qbGroupSize(nb)
	return (n+gs-1)/gs*nb*qbSB(gs) + 64
}

// qbSB is the bytes of one super-block of a group of tg tokens.
func qbSB(tg int) int { return tg * qbTok }

// qbAligned is the layout within buf: from its first cache line.
func qbAligned(buf []byte) []byte {
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf)))) & 63
	return buf[off:]
}

// layout writes tokens [j0, j1) of the n Q8_K rows in xq into the layout
// lay (qbAligned). Ranges starting at multiples of qbGroup write disjoint
// bytes.
func (f qbFormat) layout(lay, xq []byte, j0, j1, n, nb int) {
	gs := qbGroupSize(nb)
	for t := j0; t < j1; t++ {
		g, tt := t/gs, t%gs
		tg := min(gs, n-g*gs)
		base := g * nb * qbSB(gs)
		row := xq[t*nb*q8kBlock : (t+1)*nb*q8kBlock]
		for b := range nb {
			s := row[b*q8kBlock : (b+1)*q8kBlock]
			d := lay[base+b*qbSB(tg)+tt*qbTok:][:qbTok]
			for i, c := range f.order {
				copy(d[32*i:32*i+32], s[4+32*c:])
			}
			copy(d[qbBsums:qbBsums+32], s[260:292])
			copy(d[qbD:qbD+4], s[0:4])
		}
	}
}

// run computes rows of w against the layout of n tokens: for each chunk of
// about qbChunkBytes of rows, every group of tokens in turn; with dist > 0
// through the prefetching kernels.
func (f qbFormat) run(dist int, dst []float32, ldd int, w []byte, rows int, lay []byte, n, k int) {
	nb := k / 256
	if need := (n-1)*ldd + rows; len(dst) < need || ldd < rows || k%256 != 0 || len(w) < rows*nb*f.blockBytes {
		panic(fmt.Sprintf("avx512 matvec_batch/%s: bad operands: len(dst)=%d ldd=%d rows=%d n=%d k=%d len(w)=%d",
			ledger.TypeName(f.typ), len(dst), ldd, rows, n, k, len(w)))
	}
	if nb == 0 {
		for j := 0; j < n; j++ {
			clear(dst[j*ldd : j*ldd+rows])
		}
		return
	}
	rowBytes := nb * f.blockBytes
	step := max(1, qbChunkBytes/rowBytes)
	gs := qbGroupSize(nb)
	for r0 := 0; r0 < rows; r0 += step {
		rc := min(step, rows-r0)
		for g0 := 0; g0 < n; g0 += gs {
			tg := min(gs, n-g0)
			x := &lay[g0/gs*nb*qbSB(gs)]
			if dist > 0 {
				f.pf[tg-1](&w[r0*rowBytes], x, &dst[g0*ldd+r0], 4*ldd, rc, nb, qbSB(tg), dist)
			} else {
				f.kernels[tg-1](&w[r0*rowBytes], x, &dst[g0*ldd+r0], 4*ldd, rc, nb, qbSB(tg))
			}
		}
	}
}

// qbGroupSize is the tokens of a group for rows of nb super-blocks: 8, or
// fewer (4, 2, 1: a divisor of 8, so that the groups of Prepare's ranges
// stay apart) where 8 tokens' activations would not stay in L1 while a
// weight row passes over them (qbL1Bytes).
func qbGroupSize(nb int) int {
	g := qbGroup
	for g > 1 && g*nb*qbTok > qbL1Bytes {
		g /= 2
	}
	return g
}

func (f qbFormat) checkPrep(prep, xq []byte, n, nb int) {
	if len(xq) < n*nb*q8kBlock || len(prep) < qbSize(n, nb) {
		panic(fmt.Sprintf("avx512 matvec_batch/%s: %d activation bytes, a layout of %d, for %d rows of %d super-blocks",
			ledger.TypeName(f.typ), len(xq), len(prep), n, nb))
	}
}

// prepared is the variant in two steps: the layout made once for every
// worker, then any range of weight rows on it.
func (f qbFormat) prepared(dist int) *ledger.PreparedMatMul {
	return &ledger.PreparedMatMul{
		Align: qbGroup,
		Size:  func(n, k int) int { return qbSize(n, k/256) },
		Prepare: func(prep, xq []byte, j0, j1, n, k int) {
			nb := k / 256
			f.checkPrep(prep, xq, n, nb)
			if j0%qbGroup != 0 || j0 < 0 || j1 > n {
				panic(fmt.Sprintf("avx512 matvec_batch/%s: prepare rows [%d, %d) of %d", ledger.TypeName(f.typ), j0, j1, n))
			}
			f.layout(qbAligned(prep), xq, j0, j1, n, nb)
		},
		Run: func(dst []float32, ldd int, w []byte, rows int, prep []byte, n, k int) {
			if rows <= 0 || n <= 0 {
				return
			}
			f.run(dist, dst, ldd, w, rows, qbAligned(prep), n, k)
		},
	}
}

var qbScratch = sync.Pool{New: func() any { return new([]byte) }}

// matMul is prepared in one step, the layout in a pooled buffer.
func (f qbFormat) matMul(dist int) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		if rows <= 0 || n <= 0 {
			return
		}
		nb := k / 256
		bp := qbScratch.Get().(*[]byte)
		defer qbScratch.Put(bp)
		if size := qbSize(n, nb); cap(*bp) < size {
			*bp = make([]byte, size)
		}
		buf := (*bp)[:qbSize(n, nb)]
		f.checkPrep(buf, xq, n, nb)
		lay := qbAligned(buf)
		f.layout(lay, xq, 0, n, n, nb)
		f.run(dist, dst, ldd, w, rows, lay, n, k)
	}
}

func init() {
	const notes = "weight rows read as stored (no repacking): each super-block unpacked once (nibbles or 6-bit quants, " +
		"scales spread over words, d) for a group of up to 8 tokens (4 for rows of 8192 values, to keep their activations in L1), " +
		"VPMADDUBSW against every token's activations (laid out once a step, memory operands) and VPDPWSSD by the scales " +
		"into exact int32 lanes, then each token's float epilogue exactly as the avx512-vnni matvec's, so every token's outputs " +
		"are that matvec's bit for bit; rows in chunks of 128 KiB, the groups in turn over each"
	for _, f := range []qbFormat{qbQ4K, qbQ6K} {
		type form struct {
			name string
			dist int
			note string
		}
		forms := []form{{"avx512-vnni", 0, ""}}
		for _, kib := range []int{1, 2, 4, 8, 16} {
			forms = append(forms, form{fmt.Sprintf("avx512-vnni-pf%dk", kib), kib << 10,
				fmt.Sprintf("; PREFETCHT0 of every weight line %d KiB ahead (a distance sweep)", kib)})
		}
		for _, v := range forms {
			ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(f.typ), Name: v.name, Family: ledger.FamilyAVX512VNNI,
				Features: []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"},
				Impl:     f.matMul(v.dist), Prepared: f.prepared(v.dist), Notes: notes + v.note})
		}
	}
	// Q5_K: the batched kernel for a Batch's rows and, having no GEMM of
	// its own, for a prefill's (the fifth bits added at unpacking).
	for _, op := range []string{ledger.MatVecBatchOp(quant.Q5_K), ledger.MatMulOp(quant.Q5_K)} {
		ledger.Register(ledger.Variant{Op: op, Name: "avx512-vnni", Family: ledger.FamilyAVX512VNNI,
			Features: []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"},
			Impl:     qbQ5K.matMul(0), Prepared: qbQ5K.prepared(0),
			Notes: notes + "; Q5_K: the fifth bits (qh) added to the nibbles at unpacking by VPTESTMB and a masked VPADDB"})
	}
}
