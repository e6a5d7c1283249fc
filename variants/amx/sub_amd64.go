//go:build !noasm

package amx

import (
	"fmt"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// subArgs is the sub-block-sum kernels' argument block (offsets used by
// sub_amd64.s).
type subArgs struct {
	w           *byte    // 0: weight panel of the row tile, first super-block
	x           *byte    // 8: activation pack of the first token block
	dst         *float32 // 16: &dst[first token][first row of the tile]
	lddBytes    int      // 24
	nsb         int      // 32: super-blocks
	n           int      // 40: tokens
	rowMask     uint64   // 48: valid rows of the tile
	acc         *float32 // 56: subTokens × 16 floats, 64-byte aligned
	blockStride int      // 64: bytes from one token block's pack to the next
}

//go:noescape
func subKernelQ4K(a *subArgs)

//go:noescape
func subKernelQ6K(a *subArgs)

// subKernelQ4KW and subKernelQ6KW are the same with super-blocks outside
// and token blocks inside (acc: the whole group of ⌈n/12⌉ blocks).
//
//go:noescape
func subKernelQ4KW(a *subArgs)

//go:noescape
func subKernelQ6KW(a *subArgs)

//go:noescape
func subPackQ4K(a *packArgs)

//go:noescape
func subPackQ6K(a *packArgs)

// subPackQ5K is subPackQ4K for Q5_K rows (no prefetching twin).
//
//go:noescape
func subPackQ5K(a *packArgs)

// subPackQ4KPf and subPackQ6KPf are the packers prefetching the next
// tile's weights (packArgs.next) over their super-block steps.
//
//go:noescape
func subPackQ4KPf(a *packArgs)

// subPackQ4KR16 writes the panels of nb super-blocks of one 16-row group
// of the interleaved Q4_K layout (subr16_amd64.s).
//
//go:noescape
func subPackQ4KR16(panel, w *byte, n int)

// subPackQ6KR16 is subPackQ4KR16 for the interleaved Q6_K layout.
//
//go:noescape
func subPackQ6KR16(panel, w *byte, n int)

//go:noescape
func subPackQ6KPf(a *packArgs)

// prefetchLines prefetches (PREFETCHT0) lines cache lines from p on.
//
//go:noescape
func prefetchLines(p *byte, lines int)

// A subFormat is a weight type of the sub-block-sum kernel.
type subFormat struct {
	typ      quant.Type
	blkBytes int
	sbBytes  int // panel bytes per super-block
	sum32    bool
	kernel   func(*subArgs)
	kernelW  func(*subArgs) // weight-resident loop order
	consts   *[16][64]byte  // the packer's constant vectors
	// packR16, for a format over an interleaved layout (avx512's
	// Q4KR16Layout, Q6KR16Layout), packs one 16-row group's nb
	// super-blocks; blkBytes is then the layout's bytes a row and
	// super-block, so a 16-row tile starts where its group does.
	packR16 func(panel, w *byte, nb int)
}

var (
	subFormatQ4K = subFormat{quant.Q4_K, q4kBytes, subQ4Bytes, true, subKernelQ4K, subKernelQ4KW, &packConsts, nil}
	subFormatQ6K = subFormat{quant.Q6_K, q6kBytes, subQ6Bytes, false, subKernelQ6K, subKernelQ6KW, &packQ6KConsts, nil}
	// subFormatQ5K runs Q4_K's kernels: the panel is Q4_K's, with quants
	// up to 31 (VPDPBUSD takes them as unsigned bytes).
	subFormatQ5K = subFormat{quant.Q5_K, q5kBytes, subQ4Bytes, true, subKernelQ4K, subKernelQ4KW, &packConsts, nil}
)

// pack writes the panel of rows (≤ 16) rows of w, all nb super-blocks, by
// the format's assembly packer.
func (f subFormat) pack(panel, w []byte, rows, nb int) { f.packPf(panel, w, rows, nb, nil) }

// packPf is pack prefetching next (nil: none), the weights of the tile
// packed after this one (subPackQ4KPf, subPackQ6KPf).
func (f subFormat) packPf(panel, w []byte, rows, nb int, next *byte) {
	if f.packR16 != nil { // a straight stream: no prefetch of the next tile's rows
		f.packR16(&panel[0], &w[0], nb)
		return
	}
	a := newPackArgs(panel, w, rows, nb, f.blkBytes, nb, f.consts, next)
	q4k := f.typ == quant.Q4_K
	switch {
	case f.typ == quant.Q5_K: // no prefetching packer: next is a hint
		subPackQ5K(&a)
	case next == nil && q4k:
		subPackQ4K(&a)
	case next == nil:
		subPackQ6K(&a)
	case q4k:
		subPackQ4KPf(&a)
	default:
		subPackQ6KPf(&a)
	}
}

// A subProgram is the blocking of one sub-block-sum variant.
type subProgram struct {
	// tileRows rows at a time: each row tile's panel (16 rows × all of
	// k) is unpacked once per call into L2, for rowTiles tiles at once.
	rowTiles int
	// groupBlocks token blocks per kernel call: the group's activations
	// stay in L2 while the rowTiles panels pass over them.
	groupBlocks int
	// wres runs the weight-resident kernel (super-blocks outside).
	wres bool
	// pf packs each tile prefetching the next tile's weights of the call
	// (subPackQ4KPf, subPackQ6KPf).
	pf bool
	// pfFirst also prefetches the call's first tile, which no packer
	// before it has, in one sweep before packing it.
	pfFirst bool
}

// run computes rows of w against the activation pack of n tokens.
func (f subFormat) run(p subProgram, dst []float32, ldd int, w []byte, rows int, pack []byte, n, k int) {
	nb := k / qk
	if need := (n-1)*ldd + rows; len(dst) < need || ldd < rows || k%qk != 0 || len(w) < rows*nb*f.blkBytes {
		panic(fmt.Sprintf("amx %s avx512-vnni-sub: bad operands: len(dst)=%d ldd=%d rows=%d n=%d k=%d len(w)=%d",
			f.typ, len(dst), ldd, rows, n, k, len(w)))
	}
	if nb == 0 {
		for j := 0; j < n; j++ {
			clear(dst[j*ldd : j*ldd+rows])
		}
		return
	}
	if len(pack) < subActivationBytes(n, nb) {
		panic(fmt.Sprintf("amx %s avx512-vnni-sub: activation pack of %d bytes for %d rows of %d", f.typ, len(pack), n, k))
	}
	s := getScratch()
	defer putScratch(s)
	tileBytes := nb * f.sbBytes
	s.panel = aligned(s.panel, p.rowTiles*tileBytes)
	kernel, accBytes := f.kernel, subTokens*64
	if p.wres {
		kernel, accBytes = f.kernelW, p.groupBlocks*subTokens*64
	}
	s.acc = aligned(s.acc, accBytes)
	a := &s.sub
	blockStride := nb * subActBytes
	group := p.groupBlocks * subTokens
	if p.pfFirst {
		prefetchLines(&w[0], (min(tileRows, rows)*nb*f.blkBytes+63)/64)
	}
	for r0 := 0; r0 < rows; r0 += p.rowTiles * tileRows {
		tiles := min(p.rowTiles, (rows-r0+tileRows-1)/tileRows)
		for i := 0; i < tiles; i++ {
			rt := r0 + i*tileRows
			if !p.pf {
				f.pack(s.panel[i*tileBytes:], w[rt*nb*f.blkBytes:], min(tileRows, rows-rt), nb)
				continue
			}
			var next *byte
			if nt := rt + tileRows; nt < rows {
				next = &w[nt*nb*f.blkBytes]
			}
			f.packPf(s.panel[i*tileBytes:], w[rt*nb*f.blkBytes:], min(tileRows, rows-rt), nb, next)
		}
		for t0 := 0; t0 < n; t0 += group {
			for i := 0; i < tiles; i++ {
				rt := r0 + i*tileRows
				*a = subArgs{
					w:           &s.panel[i*tileBytes],
					x:           &pack[(t0/subTokens)*blockStride],
					dst:         &dst[t0*ldd+rt],
					lddBytes:    4 * ldd,
					nsb:         nb,
					n:           min(group, n-t0),
					rowMask:     1<<min(tileRows, rows-rt) - 1,
					acc:         (*float32)(unsafe.Pointer(&s.acc[0])),
					blockStride: blockStride,
				}
				kernel(a)
			}
		}
	}
}

// subPrepared is the variant in two steps: the activation pack (a block of
// subTokens tokens at a time) made once for all workers, then any row
// range's kernel calls on it.
func subPrepared(f subFormat, p subProgram) *ledger.PreparedMatMul {
	return &ledger.PreparedMatMul{
		Align:   subTokens,
		Size:    func(n, k int) int { return subActivationBytes(n, k/qk) },
		Prepare: packPrepare(fmt.Sprintf("%s avx512-vnni-sub", f.typ), subTokens, subActivationBytes, packSubActivations, f.sum32),
		Run: func(dst []float32, ldd int, w []byte, rows int, prep []byte, n, k int) {
			if rows <= 0 || n <= 0 {
				return
			}
			f.run(p, dst, ldd, w, rows, prep, n, k)
		},
	}
}

// subMatMul is subPrepared in one step.
func subMatMul(f subFormat, p subProgram) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		if rows <= 0 || n <= 0 {
			return
		}
		nb := k / qk
		if len(xq) < n*nb*q8kBytes {
			panic(fmt.Sprintf("amx %s avx512-vnni-sub: %d activation bytes for %d rows of %d", f.typ, len(xq), n, k))
		}
		s := getScratch() // run takes a second one for its own buffers
		defer putScratch(s)
		s.pack = aligned(s.pack, subActivationBytes(n, nb))
		packSubActivations(s.pack, xq, 0, n, n, nb, f.sum32)
		f.run(p, dst, ldd, w, rows, s.pack, n, k)
	}
}

func init() {
	const notes = "no digit split: VPDPBUSD of the raw quants (Q4_K 4-bit, Q6_K 6-bit) × Q8_K into int32 sums per sub-block, " +
		"times the sub-block scales (VPMULLD) into per-super-block sums, mins/−32 through the block sums (VPDPWSSD), d·dx in the epilogue; " +
		"16 rows × 12 tokens in registers; panels of 16 rows × all of k unpacked once per call"
	for _, t := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		f := subFormatQ4K
		if t == quant.Q6_K {
			f = subFormatQ6K
		}
		for _, v := range []struct {
			name string
			p    subProgram
			note string
		}{
			{"avx512-vnni-sub", subProgram{rowTiles: 4, groupBlocks: 4}, "; 4 row tiles × groups of 48 tokens a pass"},
			{"avx512-vnni-sub-wres", subProgram{rowTiles: 4, groupBlocks: 4, wres: true}, "; 4 row tiles × groups of 48 tokens a pass, " +
				"super-blocks outside and the group's token blocks inside, so each super-block's weights stay in L1"},
			{"avx512-vnni-sub-wres-g16", subProgram{rowTiles: 4, groupBlocks: 16, wres: true}, "; -wres with groups of 192 tokens"},
			{"avx512-vnni-sub-pf", subProgram{rowTiles: 4, groupBlocks: 4, pf: true}, "; 4 row tiles × groups of 48 tokens a pass; " +
				"each tile's packer prefetches the next tile's weights (PREFETCHT0, a sixteenth of its 16 rows a super-block step): " +
				"the 16 row streams of the gathers defeat the hardware prefetchers (cold 3.2 GB/s of weights a Zen 5 thread, in cache 17.8)"},
			{"avx512-vnni-sub-pf2", subProgram{rowTiles: 4, groupBlocks: 4, pf: true, pfFirst: true}, "; -pf with the call's first tile " +
				"prefetched too, in one sweep of PREFETCHT0 before packing it (a prefill deals 64 rows a call: 1 tile in 4 had none)"},
		} {
			ledger.Register(ledger.Variant{Op: ledger.MatMulOp(t), Name: v.name, Family: ledger.FamilyAVX512VNNI, Features: vnniFeatures,
				Notes: notes + v.note, Impl: subMatMul(f, v.p), Prepared: subPrepared(f, v.p)})
		}
	}
	// Q5_K (Q5_K_M, Q5_K_S files): the Q4_K kernel over subPackQ5K's
	// panels, in the two blockings that have no prefetching packer.
	for _, v := range []struct {
		name string
		p    subProgram
	}{{"avx512-vnni-sub", subProgram{rowTiles: 4, groupBlocks: 4}}, {"avx512-vnni-sub-wres", subProgram{rowTiles: 4, groupBlocks: 4, wres: true}}} {
		ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.Q5_K), Name: v.name, Family: ledger.FamilyAVX512VNNI, Features: vnniFeatures,
			Impl: subMatMul(subFormatQ5K, v.p), Prepared: subPrepared(subFormatQ5K, v.p),
			Notes: "the Q4_K kernel of matmul/q4_k:" + v.name + " (no digit split: VPDPBUSD of the raw quants × Q8_K per sub-block, scales by VPMULLD, " +
				"mins through the block sums, d·dx in the epilogue) over Q5_K panels: subPackQ5K gathers each row's qh once a super-block and " +
				"merges the fifth bits into the nibbles (quants 0..31)"})
	}
	p := subProgram{rowTiles: 4, groupBlocks: 4}
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.Q6_K), Name: "avx512-vnni-sub-r16", Family: ledger.FamilyAVX512VNNI, Features: vnniFeatures,
		Layout: avx512.Q6KR16Layout, Impl: subMatMul(subFormatQ6KR16, p), Prepared: subPrepared(subFormatQ6KR16, p),
		Notes: notes + "; the Q6_K twin of matmul/q4_k:avx512-vnni-sub-r16 (subPackQ6KR16: a sub-block's four k-quads built from its nibbles and top bits as the r16 decode kernel builds them)"})
	f := subFormatQ4KR16
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.Q4_K), Name: "avx512-vnni-sub-r16", Family: ledger.FamilyAVX512VNNI, Features: vnniFeatures,
		Layout: avx512.Q4KR16Layout, Impl: subMatMul(f, p), Prepared: subPrepared(f, p),
		Notes: notes + "; avx512-vnni-sub over the interleaved layout (the r16 matvecs'): each tile's panel packed from one 16-row group's " +
			"straight stream (subPackQ4KR16: a line's nibbles are two k-quads), where the stored layout's packer gathers 16 rows; " +
			"the step toward one copy of the weights for decode and prefill"})
}

// subFormatQ4KR16 and subFormatQ6KR16 are the formats over the
// interleaved layouts.
var (
	subFormatQ4KR16 = subFormat{typ: quant.Q4_K, blkBytes: avx512.Q4KR16Bytes / avx512.Q4KR16Rows, sbBytes: subQ4Bytes, sum32: true,
		kernel: subKernelQ4K, kernelW: subKernelQ4KW, consts: &packConsts, packR16: subPackQ4KR16}
	subFormatQ6KR16 = subFormat{typ: quant.Q6_K, blkBytes: avx512.Q6KR16Bytes / avx512.Q4KR16Rows, sbBytes: subQ6Bytes,
		kernel: subKernelQ6K, kernelW: subKernelQ6KW, consts: &packQ6KConsts, packR16: subPackQ6KR16}
)
