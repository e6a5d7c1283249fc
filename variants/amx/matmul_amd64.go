//go:build !noasm

package amx

import (
	"fmt"
	"unsafe"

	iamx "github.com/damascus-llm/damascus/internal/amx"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/freelist"
)

// A weightFormat is a weight type the tile program takes.
type weightFormat struct {
	typ      quant.Type
	blkBytes int
	pack     func(panel, w []byte, rows, nb, sb0, nsb int)
	// packPf is pack prefetching the next row tile's weights (next: its
	// row 0 at super-block sb0; nil: none).
	packPf func(panel, w []byte, rows, nb, sb0, nsb int, next *byte)
	flags  uint64
	sum32  bool // block sums of 32 values (see packActivations)
}

var (
	formatQ4K = weightFormat{quant.Q4_K, q4kBytes, packQ4KAsm, packQ4KAsmPf, 0, true}
	formatQ6K = weightFormat{quant.Q6_K, q6kBytes, packQ6KAsm, packQ6KAsmPf, flagIntMin, false}
	// formatQ5K is Q4_K's format over Q5_K rows: the same panel (mins,
	// block sums of 32), quants up to 31 (packQ5KTiles).
	formatQ5K = weightFormat{quant.Q5_K, q5kBytes, packQ5KAsm, packQ5KAsmPf, 0, true}
)

// kBlock is the super-blocks one pass over the row tiles covers: the
// activation pack of a K block (n × 8 × 292 bytes, 1.2 MB at n = 512) stays
// in L2 while every row tile streams past it. The weight panel of a K block
// (8 × 8.6 KiB) does not fit L1, so each tile product loads both operands
// from L2; the -kb2 and -kb4 variants keep the panel in L1 at the price of
// more passes over dst.
const kBlock = 8

// tileConfig is palette 1 with tiles 0-7 at 16 rows × 64 bytes.
var tileConfig = func() *iamx.Config {
	c := iamx.NewConfig()
	for t := 0; t < 8; t++ {
		c.SetTile(t, tileRows, chunkK)
	}
	return c
}()

// scratch holds one call's buffers, 64-byte aligned.
type scratch struct {
	pack, panel, cbuf, acc []byte
	panels                 []byte  // program.tilesInside's panel slots
	tiles                  []*byte // and the panels in them
	// args is the kernel's argument block: the assembly is called through
	// a func value, so a local one would escape and allocate per call.
	args kernelArgs
	sub  subArgs // the same for the sub-block-sum kernels
	// avx2, avx2Out: avx2-sub's argument block and output tile.
	avx2    subAVX2Args
	avx2Out [32]float32
}

// scratches keeps scratch buffers between calls (see package freelist).
var scratches freelist.List[scratch]

func getScratch() *scratch { return scratches.Get() }

func putScratch(s *scratch) { scratches.Put(s) }

func aligned(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	b = make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n : off+n]
}

// variantName names the tile program by where its products run.
func variantName(useAMX bool) string {
	if useAMX {
		return "amx-int8"
	}
	return "avx512-vnni-tiles"
}

// panelSource yields the weight panel of the row tile at r0 (rr rows),
// super-blocks sb0 to sb0+nsb: unpacked into s.panel per call, or a view of
// weights repacked at load.
type panelSource func(s *scratch, r0, rr, sb0, nsb int) *byte

// A program is one way of running the tile products: where they run, the
// K block, and the loop order of its kernel.
type program struct {
	amx      bool // tile products on AMX, else AVX-512 VNNI
	kb       int  // super-blocks per K block; 0: all of k in one block
	lag      bool // tileKernel's epilogue one super-block late
	wres     bool // tileKernelWR: super-blocks outside, token pairs inside
	prefetch bool // tileKernelWR: prefetch the pair after next
	// interleave runs tileKernelIL: tileKernelWR's loops with the next
	// step's products interleaved into the epilogue (AMX only).
	interleave bool
	// early (with interleave) loads the next step's first tile operands
	// before this step's tile stores.
	early bool
	// groupPairs, when not 0, splits the tokens into groups of that many
	// pairs, one kernel call per (row tile, group): the activations one
	// call streams (groupPairs × kb super-blocks) then stay in L2 even
	// when kb covers all of k.
	groupPairs int
	// fitL2, when set, picks per call: all of k in one K block with tokens
	// in groups of groupPairs when such a group's activations fit
	// l2Budget, else K blocks of kb and no groups.
	fitL2 bool
	// pfPack unpacks each row tile prefetching the next tile's weights of
	// the same super-blocks (packArgs.next of the tile packers), and sweeps a
	// call's first tile with prefetches before unpacking it: a short
	// prefill step's unpack reads cold weights from 16 rows at once, which
	// the hardware prefetchers do not follow.
	pfPack bool
	// tilesInside, when not 0, runs blocks of that many row tiles inside
	// the token groups: each K block's panels of the block unpacked once
	// into slots of their own, then per group of tokens whose activations
	// fit l2Budget beside them every row tile's kernel, so a group's
	// activations are read from L3 once per row block and from L2 by its
	// other row tiles (the other loop orders stream every token's
	// activations from L3 once per row tile).
	tilesInside int
}

// l2Budget is the activation bytes one kernel call may stream per row tile
// and still find in L2 (2 MB per core on the Xeons measured, less the
// panel, dst and cbuf traffic).
const l2Budget = 1 << 20

func (p program) name() string { return variantName(p.amx) }

// run is the tile program's driver: activations packed once, then
// runPacked.
func (f weightFormat) run(p program, dst []float32, ldd, rows int, xq []byte, n, k int, panels panelSource) {
	f.check(p, dst, ldd, rows, n, k)
	nb := k / qk
	if len(xq) < n*nb*q8kBytes {
		panic(fmt.Sprintf("amx %s %s: %d activation bytes for %d rows of %d", f.typ, p.name(), len(xq), n, k))
	}
	s := getScratch()
	defer putScratch(s)
	s.pack = aligned(s.pack, activationPackBytes(n, nb))
	packActivations(s.pack, xq, 0, n, n, nb, f.sum32)
	f.runPacked(p, s, dst, ldd, rows, s.pack, n, k, panels)
}

// check panics on operands the tile program cannot take.
func (f weightFormat) check(p program, dst []float32, ldd, rows, n, k int) {
	if need := (n-1)*ldd + rows; len(dst) < need || ldd < rows || k%qk != 0 {
		panic(fmt.Sprintf("amx %s %s: bad operands: len(dst)=%d ldd=%d rows=%d n=%d k=%d",
			f.typ, p.name(), len(dst), ldd, rows, n, k))
	}
}

// runPacked runs the kernel over the activation pack of n tokens: for each
// K block (p.kb super-blocks, or all of k), every row tile's panel through
// the kernel, once per token group (p.groupPairs pairs, or all tokens).
// s holds the call's other buffers.
func (f weightFormat) runPacked(p program, s *scratch, dst []float32, ldd, rows int, pack []byte, n, k int, panels panelSource) {
	nb := k / qk
	if nb == 0 {
		for j := 0; j < n; j++ {
			clear(dst[j*ldd : j*ldd+rows])
		}
		return
	}
	if len(pack) < activationPackBytes(n, nb) {
		panic(fmt.Sprintf("amx %s %s: activation pack of %d bytes for %d rows of %d", f.typ, p.name(), len(pack), n, k))
	}
	flags := f.flags
	if p.amx {
		if err := cpufeat.AMX(); err != nil {
			panic(fmt.Sprintf("amx %s %s called without AMX: %v", f.typ, p.name(), err))
		}
		flags |= flagAMX
	}
	if p.lag {
		flags |= flagLag
	}
	if p.prefetch {
		flags |= flagPrefetch
	}
	if p.early {
		flags |= flagEarly
	}
	kernel, accTokens := tileKernel, pairTokens
	pairs := (n + pairTokens - 1) / pairTokens
	switch {
	case p.interleave && !p.amx:
		panic(fmt.Sprintf("amx %s: the interleaved kernel has no VNNI path", f.typ))
	case p.interleave:
		kernel, accTokens = tileKernelIL, pairs*pairTokens
	case p.wres:
		kernel, accTokens = tileKernelWR, pairs*pairTokens
	}
	s.cbuf = aligned(s.cbuf, 8*tileBytes)
	s.acc = aligned(s.acc, accTokens*tileRows*4)
	a := &s.args
	*a = kernelArgs{
		lddBytes:   4 * ldd,
		n:          n,
		cbuf:       (*int32)(unsafe.Pointer(&s.cbuf[0])),
		acc:        (*float32)(unsafe.Pointer(&s.acc[0])),
		cfg:        &tileConfig[0],
		pairStride: nb * aSBBytes,
	}
	kb, group := p.kb, p.groupPairs*pairTokens
	if p.fitL2 {
		if p.groupPairs*nb*aSBBytes <= l2Budget {
			kb = 0
		} else {
			group = 0
		}
	}
	if kb == 0 {
		kb = nb
	}
	if group == 0 {
		group = n
	}
	if p.tilesInside > 0 {
		f.runTilesInside(p, s, dst, ldd, rows, pack, n, nb, kb, flags, kernel, panels)
		return
	}
	for sb0 := 0; sb0 < nb; sb0 += kb {
		a.nsb = min(kb, nb-sb0)
		a.flags = flags
		if sb0 > 0 {
			a.flags |= flagAccumulate
		}
		for r0 := 0; r0 < rows; r0 += tileRows {
			rr := min(tileRows, rows-r0)
			a.w = panels(s, r0, rr, sb0, a.nsb)
			a.rowMask = 1<<rr - 1
			for t0 := 0; t0 < n; t0 += group {
				a.n = min(group, n-t0)
				a.x = &pack[(t0/pairTokens)*a.pairStride+sb0*aSBBytes]
				a.dst = &dst[t0*ldd+r0]
				kernel(a)
			}
		}
	}
}

// runTilesInside is runPacked's loops for program.tilesInside: per block
// of p.tilesInside row tiles and K block of kb super-blocks, every row
// tile's panel into its slot, then per token group every row tile of the
// block. Each token's sums for a row tile run over the same K blocks in the
// same order as in runPacked's loops (a kernel call's tokens do not touch
// each other's sums), so the results are theirs bit for bit.
func (f weightFormat) runTilesInside(p program, s *scratch, dst []float32, ldd, rows int, pack []byte, n, nb, kb int, flags uint64, kernel func(*kernelArgs), panels panelSource) {
	a := &s.args
	slot := min(kb, nb) * wSBBytes
	s.panels = aligned(s.panels, p.tilesInside*slot)
	own := s.panel
	defer func() { s.panel = own }()
	if cap(s.tiles) < p.tilesInside {
		s.tiles = make([]*byte, p.tilesInside)
	}
	w := s.tiles[:p.tilesInside]
	for b0 := 0; b0 < rows; b0 += p.tilesInside * tileRows {
		tiles := min(p.tilesInside, (rows-b0+tileRows-1)/tileRows)
		for sb0 := 0; sb0 < nb; sb0 += kb {
			a.nsb = min(kb, nb-sb0)
			a.flags = flags
			if sb0 > 0 {
				a.flags |= flagAccumulate
			}
			for i := range tiles {
				r0 := b0 + i*tileRows
				s.panel = s.panels[i*slot : (i+1)*slot : (i+1)*slot]
				w[i] = panels(s, r0, min(tileRows, rows-r0), sb0, a.nsb)
			}
			group := max(1, (l2Budget-tiles*slot)/(a.nsb*aSBBytes)) * pairTokens
			for t0 := 0; t0 < n; t0 += group {
				a.n = min(group, n-t0)
				a.x = &pack[(t0/pairTokens)*a.pairStride+sb0*aSBBytes]
				for i := range tiles {
					r0 := b0 + i*tileRows
					a.w = w[i]
					a.rowMask = 1<<min(tileRows, rows-r0) - 1
					a.dst = &dst[t0*ldd+r0]
					kernel(a)
				}
			}
		}
	}
}

// matMul returns the tile program p's MatMul for format f, unpacking the
// weights per call.
func matMul(f weightFormat, p program) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		if rows <= 0 || n <= 0 {
			return
		}
		f.checkWeights(p, w, rows, k)
		nb := k / qk
		f.run(p, dst, ldd, rows, xq, n, k, func(s *scratch, r0, rr, sb0, nsb int) *byte {
			return f.unpackPanel(p, s, w, rows, nb, r0, rr, sb0, nsb)
		})
	}
}

// unpackPanel unpacks the row tile at r0 (rr rows), super-blocks sb0 to
// sb0+nsb, of w (rows rows of nb super-blocks) into s.panel: the panel
// source of the variants that unpack per call. Callers wrap it in a func
// literal passed straight to runPacked, which does not let it escape.
func (f weightFormat) unpackPanel(p program, s *scratch, w []byte, rows, nb, r0, rr, sb0, nsb int) *byte {
	s.panel = aligned(s.panel, nsb*wSBBytes)
	if !p.pfPack {
		f.pack(s.panel, w[r0*nb*f.blkBytes:], rr, nb, sb0, nsb)
		return &s.panel[0]
	}
	if r0 == 0 {
		// No packer before this one prefetched the call's first tile.
		for r := 0; r < rr; r++ {
			row := &w[(r*nb+sb0)*f.blkBytes]
			prefetchLines(row, (int(uintptr(unsafe.Pointer(row))%64)+nsb*f.blkBytes+63)/64)
		}
	}
	var next *byte
	if nr := r0 + tileRows; nr < rows {
		next = &w[(nr*nb+sb0)*f.blkBytes]
	}
	f.packPf(s.panel, w[r0*nb*f.blkBytes:], rr, nb, sb0, nsb, next)
	return &s.panel[0]
}

// checkWeights panics unless w holds rows rows of k values.
func (f weightFormat) checkWeights(p program, w []byte, rows, k int) {
	if len(w) < rows*(k/qk)*f.blkBytes {
		panic(fmt.Sprintf("amx %s %s: %d weight bytes for %d rows of %d", f.typ, p.name(), len(w), rows, k))
	}
}

// packPrepare is a PreparedMatMul's Prepare by pack, which packs the
// activations of tokens [j0, j1) (j0 a multiple of align) into a pack of
// packBytes(n, nb) bytes; name (the format and variant) is for its panic.
func packPrepare(name string, align int, packBytes func(n, nb int) int, pack func(prep, xq []byte, j0, j1, n, nb int, sum32 bool), sum32 bool) func(prep, xq []byte, j0, j1, n, k int) {
	return func(prep, xq []byte, j0, j1, n, k int) {
		nb := k / qk
		if j0%align != 0 || j0 < 0 || j1 > n || len(xq) < n*nb*q8kBytes || len(prep) < packBytes(n, nb) {
			panic(fmt.Sprintf("amx %s: bad prepare: rows [%d, %d) of %d, k=%d, %d activation bytes, pack of %d",
				name, j0, j1, n, k, len(xq), len(prep)))
		}
		if j0 < j1 {
			pack(prep, xq, j0, j1, n, nb, sum32)
		}
	}
}

// prepared is matMul(f, p) in two steps: the activation pack (a pair of
// token tiles at a time) made once for all workers, then any row range's
// kernel calls on it.
func prepared(f weightFormat, p program) *ledger.PreparedMatMul {
	return &ledger.PreparedMatMul{
		Align:   pairTokens,
		Size:    func(n, k int) int { return activationPackBytes(n, k/qk) },
		Prepare: packPrepare(fmt.Sprintf("%s %s", f.typ, p.name()), pairTokens, activationPackBytes, packActivations, f.sum32),
		Run: func(dst []float32, ldd int, w []byte, rows int, prep []byte, n, k int) {
			if rows <= 0 || n <= 0 {
				return
			}
			f.check(p, dst, ldd, rows, n, k)
			f.checkWeights(p, w, rows, k)
			nb := k / qk
			s := getScratch()
			defer putScratch(s)
			f.runPacked(p, s, dst, ldd, rows, prep, n, k, func(s *scratch, r0, rr, sb0, nsb int) *byte {
				return f.unpackPanel(p, s, w, rows, nb, r0, rr, sb0, nsb)
			})
		},
	}
}

// tileVariant is v with the tile program p for format f as its kernel, in
// one step (Impl) and in two (Prepared).
func tileVariant(f weightFormat, p program, v ledger.Variant) ledger.Variant {
	v.Impl, v.Prepared = matMul(f, p), prepared(f, p)
	return v
}

// MatMulQ4K is the AMX-INT8 fused-dequantize GEMM for Q4_K weights × Q8_K
// activations (ledger.MatMul contract). It needs AMX (cpufeat.AMX() == nil)
// and panics with the reason otherwise.
var MatMulQ4K = matMul(formatQ4K, program{amx: true, kb: kBlock})

// MatMulQ6K is MatMulQ4K for Q6_K weights.
var MatMulQ6K = matMul(formatQ6K, program{amx: true, kb: kBlock})

// MatMulQ4KVNNI runs the same tile program with AVX-512 VNNI tile products
// (VPDPBUSD, 16 tokens × 16 rows per pass): the non-AMX rival.
var MatMulQ4KVNNI = matMul(formatQ4K, program{kb: kBlock})

// MatMulQ6KVNNI is MatMulQ4KVNNI for Q6_K weights.
var MatMulQ6KVNNI = matMul(formatQ6K, program{kb: kBlock})

var (
	vnniFeatures = []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni"}
	amxFeatures  = append([]string{"amx-int8"}, vnniFeatures...)
)

func vnniAvailable() bool {
	for _, f := range vnniFeatures {
		if !cpufeat.Has(f) {
			return false
		}
	}
	return true
}

func init() {
	const amxNotes = "fused dequantize→int8 tiles: per call, 16 rows at a time unpacked into two 7-bit digit tiles of q·sc (sub-block scales folded in), " +
		"TDPBSUD over 2 token tiles × 2 digits per 64-k chunk, per-super-block AVX-512 epilogue (digits, bsum term by VPDPWSSD, d·dx); K blocked by 8 super-blocks"
	const vnniNotes = "the amx-int8 tile program with each tile product done by VPDPBUSD (16 token accumulators × 16 rows, activation dwords broadcast)"
	for _, t := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		f, _ := formatOf(t)
		ledger.Register(tileVariant(f, program{amx: true, kb: kBlock}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8", Family: ledger.FamilyFusedDequantAMX,
			Features: amxFeatures, Notes: amxNotes}))
		ledger.Register(tileVariant(f, program{kb: kBlock}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "avx512-vnni-tiles", Family: ledger.FamilyAVX512VNNI,
			Features: vnniFeatures, Notes: vnniNotes}))
		for _, kb := range []int{2, 4} {
			ledger.Register(tileVariant(f, program{amx: true, kb: kb}, ledger.Variant{Op: ledger.MatMulOp(t), Name: fmt.Sprintf("amx-int8-kb%d", kb), Family: ledger.FamilyFusedDequantAMX,
				Features: amxFeatures, Notes: fmt.Sprintf("amx-int8 with K blocks of %d super-blocks: the weight panel (%d KiB) stays in L1", kb, kb*wSBBytes/1024)}))
		}
		const lagNotes = ": each super-block's epilogue one super-block late, so its vector loads never read tile stores that have not reached the cache"
		ledger.Register(tileVariant(f, program{amx: true, kb: kBlock, lag: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-lag", Family: ledger.FamilyFusedDequantAMX,
			Features: amxFeatures, Notes: "amx-int8" + lagNotes}))
		ledger.Register(tileVariant(f, program{amx: true, kb: 4, lag: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-kb4-lag", Family: ledger.FamilyFusedDequantAMX,
			Features: amxFeatures, Notes: "amx-int8-kb4" + lagNotes}))
		ledger.Register(tileVariant(f, program{kb: kBlock, lag: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "avx512-vnni-tiles-lag", Family: ledger.FamilyAVX512VNNI,
			Features: vnniFeatures, Notes: "avx512-vnni-tiles" + lagNotes + " (here plain stores, which forward)"}))
		const wresNotes = "the tile program with super-blocks outside and token pairs inside (tileKernelWR): each super-block's 8 KiB of weight tiles stays in L1 across every token pair " +
			"instead of the K block's panel (69 KiB) streaming from L2 once per pair"
		for _, w := range []struct {
			name     string
			amx      bool
			kb       int
			prefetch bool
			groups   int
			notes    string
		}{
			{"amx-int8-wres", true, kBlock, false, 0, ""},
			{"amx-int8-wres-kb4", true, 4, false, 0, "; K blocks of 4"},
			{"amx-int8-wres-pf", true, kBlock, true, 0, "; the epilogue prefetches the activations of the pair after next into L1"},
			{"avx512-vnni-tiles-wres", false, kBlock, false, 0, "; tile products by VPDPBUSD"},
			{"amx-int8-wres-g8", true, 0, false, 8, "; one K block over all of k, tokens in groups of 8 pairs (dst written once, the group's activations in L2)"},
			{"amx-int8-wres-g4", true, 0, false, 4, "; one K block over all of k, tokens in groups of 4 pairs"},
		} {
			features, family := amxFeatures, ledger.FamilyFusedDequantAMX
			if !w.amx {
				features, family = vnniFeatures, ledger.FamilyAVX512VNNI
			}
			ledger.Register(tileVariant(f, program{amx: w.amx, kb: w.kb, wres: true, prefetch: w.prefetch, groupPairs: w.groups}, ledger.Variant{Op: ledger.MatMulOp(t), Name: w.name, Family: family, Features: features,
				Notes: wresNotes + w.notes}))
		}
		const ilNotes = "amx-int8-wres with the next step's tile products interleaved into this step's epilogue (tileKernelIL: one chunk, then eight tokens, four times), " +
			"so the epilogue does not queue behind 16 in-order TDPBSUDs; prefetches the step after next"
		ledger.Register(tileVariant(f, program{amx: true, kb: kBlock, interleave: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-il", Family: ledger.FamilyFusedDequantAMX, Features: amxFeatures,
			Notes: ilNotes}))
		for _, kb := range []int{2, 4, 16} {
			ledger.Register(tileVariant(f, program{amx: true, kb: kb, interleave: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: fmt.Sprintf("amx-int8-il-kb%d", kb), Family: ledger.FamilyFusedDequantAMX, Features: amxFeatures,
				Notes: fmt.Sprintf("%s; K blocks of %d super-blocks (activations of 512 tokens: %d KiB per block, against 1.2 MiB at 8)", ilNotes, kb, 512/pairTokens*kb*aSBBytes/1024)}))
		}
		ledger.Register(tileVariant(f, program{amx: true, interleave: true, groupPairs: 8}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-il-g8", Family: ledger.FamilyFusedDequantAMX, Features: amxFeatures,
			Notes: ilNotes + "; one K block over all of k, tokens in groups of 8 pairs"}))
		ledger.Register(tileVariant(f, program{amx: true, kb: kBlock, interleave: true, early: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-il-early", Family: ledger.FamilyFusedDequantAMX, Features: amxFeatures,
			Notes: ilNotes + "; the next step's chunk-0 operands loaded before this step's tile stores (overlapping the last products and the stores)"}))
		ledger.Register(tileVariant(f, program{amx: true, kb: kBlock, interleave: true, groupPairs: 8, fitL2: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-il-auto", Family: ledger.FamilyFusedDequantAMX, Features: amxFeatures,
			Notes: ilNotes + "; per call, -il-g8's blocking where a group's activations fit 1 MiB (k ≤ 3584), else -il's"}))
		const tiNotes = "; blocks of 4 row tiles (a 64-row dealt chunk) inside the token groups: each K block's 4 panels unpacked into slots of their own, then per group of tokens whose activations fit 1 MiB beside them " +
			"the 4 row tiles in turn, so the other 3 read the group's activations from L2 where -il streams every token's from L3 once per row tile. " +
			"A loser: the -r16 forms in the Intel bundle, 3B pp1024, 8 rounds (run 20261204T202411Z-3c180f): -ti4 paired by round 0.984×, -ti8 with 128-row chunks 1.006× — " +
			"the activations' trips to L3 are not what holds the tile program"
		ledger.Register(tileVariant(f, program{amx: true, kb: kBlock, interleave: true, tilesInside: 4}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-il-ti4", Family: ledger.FamilyFusedDequantAMX, Features: amxFeatures,
			Notes: ilNotes + tiNotes}))
		ledger.Register(tileVariant(f, program{kb: kBlock, tilesInside: 4}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "avx512-vnni-tiles-ti4", Family: ledger.FamilyAVX512VNNI,
			Features: vnniFeatures, Notes: vnniNotes + tiNotes}))
		const pfNotes = "; each row tile's unpack prefetches the next tile's weights (PREFETCHT0 of one super-block of its 16 rows a step) and a call's first tile is swept with prefetches first: " +
			"the gathers read 16 rows at once, which the hardware prefetchers do not follow on cold weights (a short prefill step's whole cost is that unpack)"
		ledger.Register(tileVariant(f, program{amx: true, kb: kBlock, interleave: true, pfPack: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "amx-int8-il-pf2", Family: ledger.FamilyFusedDequantAMX, Features: amxFeatures,
			Notes: ilNotes + pfNotes}))
		ledger.Register(tileVariant(f, program{kb: kBlock, pfPack: true}, ledger.Variant{Op: ledger.MatMulOp(t), Name: "avx512-vnni-tiles-pf2", Family: ledger.FamilyAVX512VNNI,
			Features: vnniFeatures, Notes: vnniNotes + pfNotes}))
	}
}

// Q5_K's tile programs (Q5_K_M and Q5_K_S files): the promoted Q4_K
// program on AMX and its VNNI twin, which checks the packer and the driver
// end to end where there is no AMX.
func init() {
	const notes = "; Q5_K rows: packQ5KTiles joins each nibble with its fifth bit from qh before the scale multiply (q·sc up to 1953: hi digits up to 15), " +
		"the panel, kernel and epilogue are Q4_K's"
	op := ledger.MatMulOp(quant.Q5_K)
	ledger.Register(tileVariant(formatQ5K, program{amx: true, kb: kBlock, interleave: true}, ledger.Variant{Op: op, Name: "amx-int8-il", Family: ledger.FamilyFusedDequantAMX,
		Features: amxFeatures, Notes: "the tile program of matmul/q4_k:amx-int8-il (tileKernelIL)" + notes}))
	ledger.Register(tileVariant(formatQ5K, program{kb: kBlock}, ledger.Variant{Op: op, Name: "avx512-vnni-tiles", Family: ledger.FamilyAVX512VNNI,
		Features: vnniFeatures, Notes: "the tile program with each tile product done by VPDPBUSD (matmul/q4_k:avx512-vnni-tiles)" + notes}))
}
