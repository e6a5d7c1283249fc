package main

// The AVX-512 K-quant matvecs of variants/avx512: Q4_K and Q6_K against a
// Q8_K activation, one row at a time (AVX-512BW, VNNI and VNNI with
// software prefetch) and four rows per pass (VNNI). The kernels of one
// format differ only in how the four products become int32 lanes and in
// the prefetches; the four-row forms repeat the one-row block per row with
// the activations loaded once.

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx512", "q4k_amd64.s", q4kFile)
	register("avx512", "q5k_amd64.s", q5kFile)
	register("avx512", "q4kx_amd64.s", q4kxFile)
	register("avx512", "q4k4_amd64.s", q4k4File)
	register("avx512", "q6k_amd64.s", q6kFile)
	register("avx512", "q6k4_amd64.s", q6k4File)
}

const (
	q4kBytes = 144 // one Q4_K super-block
	q5kBytes = 176 // one Q5_K super-block: Q4_K's header, qh[32], then the nibbles
	q6kBytes = 210 // one Q6_K super-block
	q8kBytes = 292 // one Q8_K super-block: d, 256 quants, 16 bsums
)

// Form of a one-row kernel: how the products become int32 lanes and
// whether it prefetches the weights, and with which hint.
type form struct {
	prefix    string // label prefix
	vnni      bool
	prefetch  int // cache lines prefetched per block, 0 for none
	name, sig string
	hint      hint // the prefetch instruction, when prefetch > 0
	page      bool // prefetch only where the window enters a 4 KiB page
}

// hint is the locality hint of a form's software prefetches.
type hint int

const (
	t0  hint = iota // PREFETCHT0: into every cache level (the default)
	t2              // PREFETCHT2: into L2 (and beyond), not L1
	nta             // PREFETCHNTA: non-temporal, minimising cache pollution
)

// op is the hint's prefetch instruction.
func (h hint) op() string {
	return [...]string{t0: "PREFETCHT0", t2: "PREFETCHT2", nta: "PREFETCHNTA"}[h]
}

// prefetch emits the hint's prefetch instruction for the line at mem.
func (h hint) prefetch(mem Mem) {
	switch h {
	case t0:
		a.PREFETCHT0(mem)
	case t2:
		a.PREFETCHT2(mem)
	case nta:
		a.PREFETCHNTA(mem)
	default:
		panic(fmt.Sprintf("unknown prefetch hint %d", int(h)))
	}
}

const rowSig = "func(dst *float32, rows int, w, xq *byte, nb int)"
const prefetchSig = "func(dst *float32, rows int, w, xq *byte, nb, dist int)"

// rowForms are a format's one-row kernels: AVX-512BW, VNNI, VNNI with
// lines prefetches a block under each hint, and VNNI with four prefetches
// where the window enters a 4 KiB page (the T2, NTA and page forms
// experiments for the Intel cores at 2 threads, issue 20).
func rowForms(q string, lines int) []form {
	return []form{
		{q, false, 0, q + "RowsAVX512", rowSig, t0, false},
		{"v" + q, true, 0, q + "RowsVNNI", rowSig, t0, false},
		{"p" + q, true, lines, q + "RowsVNNIPrefetch", prefetchSig, t0, false},
		{"p" + q + "t2", true, lines, q + "RowsVNNIPrefetchT2", prefetchSig, t2, false},
		{"p" + q + "nta", true, lines, q + "RowsVNNIPrefetchNTA", prefetchSig, nta, false},
		{"pg" + q, true, 4, q + "RowsVNNIPrefetchPage", prefetchSig, t0, true},
	}
}

// loadArgs loads dst, rows, w and xq into DX, R8, w and R10.
func loadArgs(w Register) { loadArgsX(w, "xq") }

// loadArgsX is loadArgs for an activation argument named x.
func loadArgsX(w Register, x string) {
	mArgs.use(func() { loadArgsBody(w, x) }, w, x)
}

func loadArgsBody(w Register, x string) {
	a.MOVQ(param("dst", 0), RDX)
	a.MOVQ(param("rows", 8), R8)
	a.MOVQ(param("w", 16), w)
	a.MOVQ(param(x, 24), R10)
}

// broadcast32 sets every dword of z to c (through AX).
func broadcast32(c uint32, z Register) {
	a.MOVL(Imm(uint64(c)), EAX)
	a.VPBROADCASTD(EAX, z)
}

// products sums the word pairs Z10-Z13 weighted by the scale words Z16-Z19
// into the int32 lanes of Z4: VPMADDWD + VPADDD, or VPDPWSSD with VNNI.
func products(vnni bool) {
	inline := func() { productsBody(vnni) }
	if vnni {
		mProductsVNNI.use(inline)
	} else {
		mProductsBW.use(inline)
	}
}

// productsMacro is the name of products(vnni)'s macro.
func productsMacro(vnni bool) string {
	if vnni {
		return mProductsVNNI.name
	}
	return mProductsBW.name
}

func productsBody(vnni bool) {
	if vnni {
		a.VPXORD(Z4, Z4, Z4)
		a.VPXORD(Z5, Z5, Z5)
		vpdpwssd(Z16, Z10, Z4)
		vpdpwssd(Z17, Z11, Z5)
		vpdpwssd(Z18, Z12, Z4)
		vpdpwssd(Z19, Z13, Z5)
		a.VPADDD(Z5, Z4, Z4)
		return
	}
	a.VPMADDWD(Z16, Z10, Z4)
	a.VPMADDWD(Z17, Z11, Z5)
	a.VPMADDWD(Z18, Z12, Z10)
	a.VPMADDWD(Z19, Z13, Z11)
	a.VPADDD(Z5, Z4, Z4)
	a.VPADDD(Z11, Z10, Z10)
	a.VPADDD(Z10, Z4, Z4)
}

// rowLoop is the one-row loop shared by the K-quant and Q8_0 kernels of
// both widths: per row, clear the float sums, run block over the nb
// blocks (stepping SI by wBytes and DI by xBytes), store the row.
type rowLoop struct {
	sums           []VecPhysical
	clear          func(VecPhysical) // how a sum is zeroed
	block          func(form)
	wBytes, xBytes int
	store          func()
}

func vpxord(s VecPhysical) { a.VPXORD(s, s, s) }
func vpxor(s VecPhysical)  { a.VPXOR(s, s, s) }

func rowKernel(f form, prologue func(), l rowLoop) {
	text(f.name, f.sig)
	dist := func() {
		if f.prefetch > 0 {
			mDist.use(rowDist)
		}
	}
	if mRows.here() {
		pro, ok := oneLine(prologue)
		if !ok {
			prologue()
			pro = mNone.name()
		}
		setup, _ := oneLine(dist)
		clear, ok0 := oneLine(func() { zeroSums(l) })
		pf, ok1 := oneLine(func() { blockPrefetch(f, l.wBytes) })
		blk, ok2 := oneLine(func() { l.block(f) })
		st, ok3 := oneLine(l.store)
		if ok0 && ok1 && ok2 && ok3 {
			mRows.use(nil, pro, setup, clear, pf, blk, l.wBytes, l.xBytes, st)
			return
		}
		if pro != mNone.name() {
			prologue()
		}
	} else {
		prologue()
	}
	dist()
	rowBody(f.prefix+"Row", f.prefix+"Block", f.prefix+"Done", l.wBytes, l.xBytes,
		func() { zeroSums(l) }, func() { blockPrefetch(f, l.wBytes) }, func() { l.block(f) }, l.store)
}

// rowDist loads a prefetch form's distance into R12.
func rowDist() { a.MOVQ(param("dist", 40), R12) }

// rowBody is rowKernel's loop: labels row, blk and done; per row clear,
// then per block pf, block and the steps (wBytes, xBytes), then store.
func rowBody(row, blk, done string, wBytes, xBytes int, clear, pf, block, store func()) {
	rowsTop(row, done, 32)
	clear()
	a.Label(blk)
	pf()
	block()
	a.ADDQ(imm(wBytes), RSI)
	a.ADDQ(imm(xBytes), RDI)
	a.DECQ(RCX)
	a.JNZ(LabelRef(blk))
	store()
	rowsEnd(row, done)
}

// rowsTop opens a row loop at label row: on to done when R8 is zero, else
// DI = x (R10) and CX = the nb argument at nbOff(FP).
func rowsTop(row, done string, nbOff int) {
	mRowsTop.use(func() { rowsTopBody(row, done, nbOff) }, row, done, nbOff)
}

func rowsTopBody(row, done string, nbOff int) {
	a.Label(row)
	a.TESTQ(R8, R8)
	a.JZ(LabelRef(done))
	a.MOVQ(R10, RDI)
	a.MOVQ(param("nb", nbOff), RCX)
}

// rowsEnd closes a row loop: R8 down, back to row; at done the kernel's
// end.
func rowsEnd(row, done string) { mRowsEnd.use(func() { rowsEndBody(row, done) }, row, done) }

func rowsEndBody(row, done string) {
	a.DECQ(R8)
	a.JMP(LabelRef(row))
	a.Label(done)
	a.VZEROUPPER()
	a.RET()
}

// zeroSums clears l's sums (zeroRegs).
func zeroSums(l rowLoop) { zeroRegs(l.clear, l.sums...) }

// zeroRegs clears rs with clear, one instruction "OP r, r, r" each:
// ZEROn(OP, rs...) for n = 1, 2 or 4 where the package has those macros.
func zeroRegs(clear func(VecPhysical), rs ...VecPhysical) {
	inline := func() {
		for _, r := range rs {
			clear(r)
		}
	}
	m, ok := mZeros[len(rs)]
	if !ok || !m.here() {
		inline()
		return
	}
	ls := capture(inline)
	op := strings.Fields(ls[0])[0]
	args := []any{op}
	for i, r := range rs {
		if ls[i] != fmt.Sprintf("%s %[2]s, %[2]s, %[2]s", op, r.Asm()) {
			inline()
			return
		}
		args = append(args, r)
	}
	m.use(nil, args...)
}

// zeroSample is ZEROn's body for the n samples Z24, Z25, ... (op VPXORD):
// the instruction (n = 1), else ZERO<n/2> of each half.
func zeroSample(n int) (func(), func() []string) {
	return func() {
			if n == 1 {
				vpxord(zs[24])
				return
			}
			for h := 0; h < 2; h++ {
				var rs []string
				for i := 0; i < n/2; i++ {
					rs = append(rs, zs[24+h*n/2+i].Asm())
				}
				placeholder(fmt.Sprintf("ZERO%d(VPXORD, %s)", n/2, strings.Join(rs, ", ")))
			}
		}, func() []string {
			ss := []string{"VPXORD"}
			for i := 0; i < n; i++ {
				ss = append(ss, zs[24+i].Asm())
			}
			return ss
		}
}

// blockPrefetch is a form's prefetch of the block at SI: f.prefetch lines
// dist = R12 ahead under f.hint, or the page form's (pagePrefetch).
func blockPrefetch(f form, wBytes int) {
	if f.page {
		pagePrefetch(f, wBytes)
		return
	}
	prefetchLines(f, R12)
}

// prefetchLines prefetches f.prefetch lines from SI + dist (f.hint):
// PF_LINES3 or PF_LINES4.
func prefetchLines(f form, dist Register) {
	switch f.prefetch {
	case 3:
		mPfLines3.use(func() { pfLines(f, dist) }, f.hint.op(), dist)
	case 4:
		mPfLines4.use(func() { pfLines(f, dist) }, f.hint.op(), dist)
	default:
		pfLines(f, dist)
	}
}

// pfLines prefetches f.prefetch lines from SI + dist (f.hint).
func pfLines(f form, dist Register) {
	for i := 0; i < f.prefetch; i++ {
		f.hint.prefetch(Mem{Base: RSI, Index: dist, Scale: 1, Disp: 64 * i})
	}
}

// oneLine captures emit; ok where it emits at most one instruction, a
// macro's invocation (which can stand as a macro's argument), or none
// (NONE: the assembler does not take an empty argument).
func oneLine(emit func()) (s string, ok bool) {
	ls := capture(emit)
	switch {
	case len(ls) == 0:
		return mNone.name(), true
	case len(ls) > 1:
		return "", false
	}
	i := strings.Index(ls[0], "(")
	if strings.ContainsAny(ls[0], " ,") && (i < 0 || strings.IndexAny(ls[0], " ,") < i) {
		return "", false
	}
	return ls[0], true
}

// pagePrefetch is a page form's prefetch for the block at SI: the window
// is the block's bytes dist = R12 ahead, [A, A+wBytes) with A = SI + R12.
// Where a 4 KiB boundary B lies in (A, A+wBytes], that is where the page
// offset r of A+wBytes is below wBytes, B = A+wBytes-r and f.prefetch
// lines from B are prefetched; otherwise a short forward branch skips them.
// Every boundary the window passes is so prefetched once (one block in
// 4096/wBytes). AX is the scratch: the blocks write it before reading it.
func pagePrefetch(f form, wBytes int) {
	if f.prefetch == 4 {
		mPfPage.use(func() { pagePrefetchBody(f, wBytes, f.prefix+"SamePage") }, f.hint.op(), wBytes, f.prefix+"SamePage")
		return
	}
	pagePrefetchBody(f, wBytes, f.prefix+"SamePage")
}

func pagePrefetchBody(f form, wBytes int, skip string) {
	a.LEAQ(Mem{Base: RSI, Index: R12, Scale: 1, Disp: wBytes}, RAX)
	a.ANDL(imm(4095), EAX)
	a.CMPL(EAX, imm(wBytes))
	a.JAE(LabelRef(skip))
	a.NEGQ(RAX)
	a.ADDQ(RSI, RAX)
	for i := 0; i < f.prefetch; i++ {
		f.hint.prefetch(Mem{Base: RAX, Index: R12, Scale: 1, Disp: wBytes + 64*i})
	}
	a.Label(skip)
}

// fourRowKernel is the four-row loop: rows is a positive multiple of 4;
// R13 walks groups of four rows, SI and R12 = SI + 2 rows, BX = 0 and R9 =
// one row's bytes index the rows; activations stays in registers for the
// four row blocks.
func fourRowKernel(name string, blockBytes int, constants func(), group, blk string, sums [4]VecPhysical, activations func(), rowBlock func(b, i Register, acc VecPhysical)) {
	text(name, rowSig)
	blocks := [4]func(){
		func() { rowBlock(RSI, RBX, sums[0]) },
		func() { rowBlock(RSI, R9, sums[1]) },
		func() { rowBlock(R12, RBX, sums[2]) },
		func() { rowBlock(R12, R9, sums[3]) },
	}
	if mFourRows.here() {
		args := []any{blockBytes}
		ok := true
		for _, emit := range append([]func(){constants, activations}, blocks[:]...) {
			s, one := oneLine(emit)
			args, ok = append(args, s), ok && one
		}
		if ok {
			for _, s := range sums {
				args = append(args, s)
			}
			mFourRows.use(nil, args...)
			return
		}
	}
	fourRowBody(blockBytes, constants, group, blk, sums, activations, blocks)
}

// fourRowBody is fourRowKernel after its TEXT line: labels group and blk,
// the sums cleared, per block activations and the four row blocks.
func fourRowBody(blockBytes int, constants func(), group, blk string, sums [4]VecPhysical, activations func(), blocks [4]func()) {
	loadArgs(R13)
	a.MOVQ(param("nb", 32), R9)
	a.IMUL3Q(imm(blockBytes), R9, R9)
	a.XORQ(RBX, RBX)
	constants()
	a.Label(group)
	a.MOVQ(R13, RSI)
	a.LEAQ(Mem{Base: R13, Index: R9, Scale: 2}, R12)
	a.MOVQ(R10, RDI)
	a.MOVQ(param("nb", 32), RCX)
	zeroRegs(vpxord, sums[:]...)
	a.Label(blk)
	activations()
	for _, b := range blocks {
		b()
	}
	a.ADDQ(imm(blockBytes), RSI)
	a.ADDQ(imm(blockBytes), R12)
	a.ADDQ(imm(q8kBytes), RDI)
	a.DECQ(RCX)
	a.JNZ(LabelRef(blk))
	for i, s := range sums {
		store4(s, 4*i)
	}
	a.ADDQ(Imm(16), RDX)
	a.LEAQ(Mem{Base: R13, Index: R9, Scale: 4}, R13)
	a.SUBQ(Imm(4), R8)
	a.JNZ(LabelRef(group))
	a.VZEROUPPER()
	a.RET()
}

// ---- Q4_K ----

// q4kConstants: Z31 the nibble mask, Z27-Z30 the scale spreads, Y26 the
// min spread.
func q4kConstants() { mQ4kConstants.use(q4kConstantsBody) }

func q4kConstantsBody() {
	broadcast32(0x0f0f0f0f, Z31)
	loadRows("q4kScaleIdx", Z30, Z29, Z28, Z27)
	a.VMOVDQU64(sym("q4kMinIdx", 0), Y26)
}

// loadRows loads the 64-byte rows of the table ·name into zs in turn.
func loadRows(name string, zs ...VecPhysical) {
	if len(zs) == 4 {
		mLoadRows4.use(func() { loadRowsBody(name, zs...) }, "·"+name, zs[0], zs[1], zs[2], zs[3])
		return
	}
	loadRowsBody(name, zs...)
}

func loadRowsBody(name string, zs ...VecPhysical) {
	for i, z := range zs {
		a.VMOVDQU64(sym(name, 64*i), z)
	}
}

// q4kScales unpacks the 12 scale bytes at 4(SI) into AX = 8 scales, BX =
// 8 mins (ggml's get_scale_min_k4, four at a time).
func q4kScales() { mQ4kScales.use(q4kScalesBody) }

func q4kScalesBody() {
	a.MOVL(m(RSI, 4), EAX)
	a.MOVL(m(RSI, 8), EBX)
	a.MOVL(m(RSI, 12), R9L)
	a.MOVL(R9L, R11L)
	a.SHRL(Imm(4), R11L)
	a.ANDL(Imm(0x0f0f0f0f), R11L)
	q4kHighBits(EBX, R11L)
	a.ANDL(Imm(0x0f0f0f0f), R9L)
	q4kHighBits(EAX, R9L)
	a.ANDL(Imm(0x3f3f3f3f), EBX)
	a.ANDL(Imm(0x3f3f3f3f), EAX)
	a.SHLQ(Imm(32), R9)
	a.ORQ(R9, RAX)
	a.SHLQ(Imm(32), R11)
	a.ORQ(R11, RBX)
}

// q4kHighBits ors the top two bits of each byte of src into bits 4-5 of
// dst's (through R13).
func q4kHighBits(src, dst GPPhysical) {
	mQ4kHighBits.use(func() { q4kHighBitsBody(src, dst) }, src, dst)
}

func q4kHighBitsBody(src, dst GPPhysical) {
	a.MOVL(src, R13L)
	a.SHRL(Imm(6), R13L)
	a.ANDL(Imm(0x03030303), R13L)
	a.SHLL(Imm(4), R13L)
	a.ORL(R13L, dst)
}

// q4kQuants loads the 128 quant bytes at 16(w) as four nibble vectors
// Z10-Z13.
func q4kQuants(w func(disp int) Mem) {
	mQ4kQuants.use(func() { q4kQuantsBody(w) }, w(0))
}

func q4kQuantsBody(w func(disp int) Mem) {
	for i, lo := range []VecPhysical{Z10, Z12} {
		hi := zs[11+2*i]
		a.VMOVDQU8(w(16+64*i), lo)
		a.VPSRLW(Imm(4), lo, hi)
		a.VPANDD(Z31, lo, lo)
		a.VPANDD(Z31, hi, hi)
	}
}

// q4kSpread spreads the scales Z20 over the words Z16-Z19.
func q4kSpread() { mQ4kSpread.use(q4kSpreadBody) }

func q4kSpreadBody() {
	for i := 0; i < 4; i++ {
		a.VPSHUFB(zs[30-i], Z20, zs[16+i])
	}
}

// q4kMinsTerm turns the mins Y21 into float lanes weighted by the
// activation bsums at 260(DI).
func q4kMinsTerm() { mQ4kMinsTerm.use(q4kMinsTermBody) }

func q4kMinsTermBody() {
	a.VPSHUFB(Y26, Y21, Y21)
	a.VPMADDWD(m(RDI, 260), Y21, Y21)
	a.VCVTDQ2PS(Y21, Y21)
}

// q4kFactors: the block's fp16 d and dmin at (SI) times dx at (DI), in
// the scratch x (tmp for dx), broadcast to d·dx and dmin·dx.
func q4kFactors(x, tmp, d, dmin VecPhysical) {
	a.VMOVD(m(RSI, 0), x)
	a.VCVTPH2PS(x, x)
	a.VBROADCASTSS(m(RDI, 0), tmp)
	a.VMULPS(tmp, x, x)
	a.VBROADCASTSS(x, d)
	a.VMOVSHDUP(x, x)
	a.VBROADCASTSS(x, dmin)
}

func q4kProducts() { mQ4kProducts.use(q4kProductsBody) }

func q4kProductsBody() {
	for i := 0; i < 4; i++ {
		a.VPMADDUBSW(zs[i], zs[10+i], zs[10+i])
	}
}

// q4kFile writes variants/avx512/q4k_amd64.s:
//
// Q4_K × Q8_K matrix-vector product, one row at a time.
//
// Per super-block: the 128 quant bytes are two 64-byte loads; their low and
// high nibbles are four vectors of 64 unsigned 4-bit values, each covering
// two 32-value sub-blocks (bytes 0-31 one, 32-63 the other). VPMADDUBSW
// multiplies them by the matching signed activation bytes into word pairs
// (at most 2·15·128, no saturation); the sub-block scales, spread by VPSHUFB
// over the words, weight the pairs into int32 lanes (VPMADDWD + VPADDD, or
// VPDPWSSD with VNNI). The mins term is the 16 activation bsums times the
// mins. Integer sums are exact per super-block; they are scaled by d·dx and
// dmin·dx into float32 lane accumulators, reduced once per row.
//
// Register plan: Z0-Z3 activations, Z4/Z5 int accumulators, Z6-Z9 scratch,
// Z10-Z13 quants and products, Z16-Z19 scale words, Z20 scales, Z21 mins,
// Z22 dmin·dx, Z23 d·dx, Z24 float sum, Z25 float mins sum, Z26-Z31 constants.
func q4kFile() {
	prologue := func() { mQ4kPrologue.use(func() { loadArgs(RSI); q4kConstants() }) }
	for _, f := range rowForms("q4k", 3) {
		rowKernel(f, prologue, rowLoop{[]VecPhysical{Z24, Z25}, vpxord, q4kBlock, q4kBytes, q8kBytes, func() { rowStore(Z24, Z25) }})
	}
}

// q4kBlock: one super-block at SI into Z24 (scaled products) and Z25
// (mins term).
func q4kBlock(f form) {
	mQ4kBlock.use(func() { q4kBlockBody(func() { products(f.vnni) }) }, productsMacro(f.vnni))
}

func q4kBlockBody(products func()) {
	kBlockBody(func() { q4kQuants(func(d int) Mem { return m(RSI, d) }) }, products)
}

// kBlockBody is a one-row Q4_K or Q5_K super-block at SI (quants loads its
// nibble vectors Z10-Z13) into Z24 and Z25.
func kBlockBody(quants, products func()) {
	q4kScales()
	a.VPBROADCASTQ(RAX, Z20)
	a.VPBROADCASTQ(RBX, Y21)
	q4kMinsTerm()
	q4kFactors(X6, X7, Z23, Y22)
	a.VFMADD231PS(Y22, Y21, Y25)
	q4kSpread()
	quants()
	q4kActivations()
	q4kProducts()
	products()
	a.VCVTDQ2PS(Z4, Z4)
	a.VFMADD231PS(Z23, Z4, Z24)
}

// q5kFile writes variants/avx512/q5k_amd64.s: Q5_K × Q8_K one row at a
// time, q4kFile's kernel with Q5_K's block (qh[32] at 16, the nibbles at
// 48) and each quant's fifth bit added to its nibble (q5kQuants); the
// VNNI form and its PREFETCHT0 and PREFETCHNTA forms.
func q5kFile() {
	prologue := func() { mQ5kPrologue.use(q5kPrologueBody) }
	for _, f := range rowForms("q5k", 3) {
		if !f.vnni || f.page || f.hint == t2 {
			continue
		}
		rowKernel(f, prologue, rowLoop{[]VecPhysical{Z24, Z25}, vpxord, q5kBlock, q5kBytes, q8kBytes, func() { rowStore(Z24, Z25) }})
	}
}

// q5kPrologueBody is the Q4_K prologue and the byte 16 in every lane of
// Z15 (the fifth bit's value).
func q5kPrologueBody() {
	loadArgs(RSI)
	q4kConstants()
	a.MOVL(U32(0x10101010), EAX)
	a.VPBROADCASTD(EAX, Z15)
}

func q5kBlock(f form) {
	mQ5kBlock.use(func() { kBlockBody(q5kQuants, func() { products(f.vnni) }) }, productsMacro(f.vnni))
}

// q5kQuants loads a Q5_K block's nibbles at 48(SI) as q4kQuants's vectors
// Z10-Z13 (sub-blocks 0|2, 1|3, 4|6, 5|7, one a 32-byte half) and adds 16
// (Z15) to each quant whose sub-block bit of qh[l] is set: qh broadcast to
// both halves (Z14), VPTESTMB against ·q5kHighBit (each half's bit), a
// byte-masked VPADDB.
func q5kQuants() { mQ5kQuants.use(q5kQuantsBody) }

func q5kQuantsBody() {
	a.VBROADCASTI64X4(m(RSI, 16), Z14)
	q4kQuantsBody(func(d int) Mem { return m(RSI, d+32) })
	for i, z := range []VecPhysical{Z10, Z11, Z12, Z13} {
		k := []Register{K1, K2, K3, K4}[i]
		a.VPTESTMB(sym("q5kHighBit", 64*i), Z14, k)
		a.VPADDB(Z15, z, k, z)
	}
}

// q4k4File writes variants/avx512/q4k4_amd64.s:
//
// Q4_K × Q8_K, four rows per pass (VNNI): the activation vectors, dx and
// the loop overhead are shared by four rows; each row keeps one float
// accumulator (the mins term is subtracted from it directly). The 6-bit
// scales and mins are unpacked in an XMM register, not in GPRs:
// [u0, u1, u2] = the 12 scale bytes as dwords,
//
//	scales = [u0 & 0x3f.., (u2 & 0x0f..) | (u0>>2 & 0x30..)],
//	mins   = [u1 & 0x3f.., (u2>>4 & 0x0f..) | (u1>>2 & 0x30..)].
//
// Register plan: Z0-Z3 activations, Z4/Z5 int sums, Z6-Z8 scratch, Z9 dx,
// Z10-Z13 products, Z14/Z15/Z24/Z25 the rows' float sums, Z16-Z19 scale
// words, Z20 scales, Z21 mins, Z22 dmin·dx, Z23 d·dx, Z26-Z31 constants;
// BX = 0 as a null index. The scale and min spreading tables are
// tables_amd64.go's ·q4kScaleIdx and ·q4kMinIdx.
func q4k4File() {
	fourRowKernel("q4kRows4VNNI", q4kBytes, q4kConstants, "group", "block",
		[4]VecPhysical{Z14, Z15, Z24, Z25}, q4k4Activations, q4k4RowBlock)
}

func q4k4Activations() { mQ4k4Activations.use(q4k4ActivationsBody) }

func q4k4ActivationsBody() {
	q4kActivations()
	a.VBROADCASTSS(m(RDI, 0), X9)
}

// q4kActivations loads the Q8_K quants at 4(DI) into Z0-Z3, each pair of
// 32-byte sub-blocks that meets a nibble vector.
func q4kActivations() { mQ4kActivations.use(q4kActivationsBody) }

func q4kActivationsBody() {
	for i, off := range []int{4, 36, 132, 164} {
		y := []VecPhysical{Y0, Y1, Y2, Y3}[i]
		z := []VecPhysical{Z0, Z1, Z2, Z3}[i]
		a.VMOVDQU8(m(RDI, off), y)
		a.VINSERTI64X4(Imm(1), m(RDI, off+64), z, z)
	}
}

// q4k4RowBlock: one row's super-block at B+I, scales and mins unpacked in
// XMM registers, everything into the float sum acc.
func q4k4RowBlock(b, i Register, acc VecPhysical) {
	mQ4k4Row.use(func() { q4k4RowBody(b, i, acc) }, mi(b, i, 0), acc)
}

func q4k4RowBody(b, i Register, acc VecPhysical) {
	w := func(d int) Mem { return mi(b, i, d) }
	a.VMOVQ(w(4), X6)
	a.VPINSRD(Imm(2), w(12), X6, X6)
	a.VPSHUFD(Imm(0x98), X6, X7)
	a.VPSRLVD(sym("q4k4Pick", 32), X7, X7)
	a.VPAND(sym("q4k4Pick", 0), X7, X7)
	a.VPSHUFD(Imm(0x50), X6, X6)
	a.VPSRLD(Imm(2), X6, X6)
	a.VPAND(sym("q4k4Pick", 16), X6, X6)
	a.VPOR(X6, X7, X7)
	a.VPBROADCASTQ(X7, Z20)
	a.VPSHUFD(Imm(0xee), X7, X7)
	a.VPBROADCASTQ(X7, Y21)
	q4kMinsTerm()
	a.VMOVD(w(0), X6)
	a.VCVTPH2PS(X6, X6)
	a.VMULPS(X9, X6, X6)
	a.VBROADCASTSS(X6, Z23)
	a.VMOVSHDUP(X6, X6)
	a.VBROADCASTSS(X6, Z22)
	a.VFNMADD231PS(Z22, Z21, acc)
	q4kSpread()
	q4kQuants(w)
	q4kProducts()
	products(true)
	a.VCVTDQ2PS(Z4, Z4)
	a.VFMADD231PS(Z23, Z4, acc)
}

// ---- Q6_K ----

// q6kConstants: Z31 the low-nibble mask, Z30 the high-bits mask, Z26-Z29
// the scale spreads.
func q6kConstants() { mQ6kConstants.use(q6kConstantsBody) }

func q6kConstantsBody() {
	broadcast32(0x0f0f0f0f, Z31)
	broadcast32(0x30303030, Z30)
	loadRows("q6kScaleIdx", Z29, Z28, Z27, Z26)
}

// q6kHalf: the quants of half a block (ql at qlOff, qh at qhOff of w) into
// lo (values 0-63) and hi (64-127), multiplied by the activations ylo, yhi
// (loaded from yOff(DI) into Z0/Z1 first when load is set).
func q6kHalf(w func(int) Mem, qlOff, qhOff int, load bool, yOff int, ylo, yhi, lo, hi VecPhysical) {
	q6kUnpackHalf(w, qlOff, qhOff, lo, hi, Z6, Z7, Z8)
	if load {
		a.VMOVDQU8(m(RDI, yOff), ylo)
		a.VMOVDQU8(m(RDI, yOff+64), yhi)
	}
	a.VPMADDUBSW(ylo, lo, lo)
	a.VPMADDUBSW(yhi, hi, hi)
}

// q6kUnpackHalf: the unsigned 6-bit quants of half a block (ql at qlOff,
// qh at qhOff of w) into lo (values 0-63) and hi (64-127), through the
// scratch registers s0-s2 (ZMM); Z31 and Z30 hold q6kConstants' masks.
func q6kUnpackHalf(w func(int) Mem, qlOff, qhOff int, lo, hi, s0, s1, s2 VecPhysical) {
	mQ6kUnpackHalf.use(func() { q6kUnpackHalfBody(w, qlOff, qhOff, lo, hi, s0, s1, s2) },
		w(0), qlOff, qhOff, lo, hi, s0, s1, s1.AsY(), s2, s2.AsY())
}

func q6kUnpackHalfBody(w func(int) Mem, qlOff, qhOff int, lo, hi, s0, s1, s2 VecPhysical) {
	a.VMOVDQU8(w(qlOff), s0)
	a.VMOVDQU8(w(qhOff), s1.AsY())
	a.VPSRLW(Imm(2), s1.AsY(), s2.AsY())
	a.VINSERTI64X4(Imm(1), s2.AsY(), s1, s1)
	a.VPSRLW(Imm(4), s0, hi)
	a.VPANDD(Z31, s0, lo)
	a.VPANDD(Z31, hi, hi)
	a.VPSLLW(Imm(4), s1, s2)
	a.VPANDD(Z30, s2, s2)
	a.VPORD(s2, lo, lo)
	a.VPANDD(Z30, s1, s1)
	a.VPORD(s1, hi, hi)
}

// q6kScaleWords spreads the 16 int8 scales at 192(w) over Z16-Z19 (words
// in Y14).
func q6kScaleWords(w func(int) Mem) {
	mQ6kScaleWords.use(func() { q6kScaleWordsBody(w) }, w(0))
}

func q6kScaleWordsBody(w func(int) Mem) {
	a.VPMOVSXBW(w(192), Y14)
	for i := 0; i < 4; i++ {
		a.VPERMW(Z14, zs[29-i], zs[16+i])
	}
}

// q6kOffset subtracts the -32 offset term (32·Σ scale·bsum) from Z4 and
// converts it to float; the fp16 d of the block at 208(w) ends in X6.
func q6kOffset(w func(int) Mem) {
	mQ6kOffset.use(func() { q6kOffsetBody(w) }, w(0))
}

func q6kOffsetBody(w func(int) Mem) {
	a.VPMADDWD(m(RDI, 260), Y14, Y15)
	a.VPSLLD(Imm(5), Y15, Y15)
	a.VPSUBD(Z15, Z4, Z4)
	a.VCVTDQ2PS(Z4, Z4)
	a.MOVWLZX(w(208), EAX)
	a.VMOVD(EAX, X6)
	a.VCVTPH2PS(X6, X6)
}

// q6kFile writes variants/avx512/q6k_amd64.s:
//
// Q6_K × Q8_K matrix-vector product, one row at a time.
//
// Each half super-block (128 values) is one 64-byte load of low nibbles
// (values 0-63 low, 64-127 high, in order) and 32 bytes of high bits, which
// [qh, qh>>2] spreads over both 32-byte halves so that bits 4-5 (after <<4
// for the low set) land on the right values. The quants stay unsigned
// (0..63): VPMADDUBSW against the activations, then the 16 int8 scales,
// spread by VPERMW one per 128-bit lane, weight the word pairs into int32
// lanes. The -32 offset is 32·Σ scale·bsum, one VPMADDWD over the
// activation's bsums.
//
// Register plan: Z0/Z1 activations, Z4/Z5 int accumulators, Z6-Z8 scratch,
// Z10-Z13 quants and products, Z14 scale words, Z16-Z19 spread scales,
// Z23 d·dx, Z24 float sum, Z26-Z31 constants.
func q6kFile() {
	prologue := func() { mQ6kPrologue.use(func() { loadArgs(RSI); q6kConstants() }) }
	for _, f := range rowForms("q6k", 4) {
		rowKernel(f, prologue, rowLoop{[]VecPhysical{Z24}, vpxord, q6kBlock, q6kBytes, q8kBytes, func() { rowStore(Z24, nil) }})
	}
}

func q6kBlock(f form) {
	mQ6kBlock.use(func() { q6kBlockBody(func() { products(f.vnni) }) }, productsMacro(f.vnni))
}

func q6kBlockBody(products func()) {
	w := func(d int) Mem { return m(RSI, d) }
	q6kScaleWords(w)
	q6kHalf(w, 0, 128, true, 4, Z0, Z1, Z10, Z11)
	q6kHalf(w, 64, 160, true, 132, Z0, Z1, Z12, Z13)
	products()
	q6kOffset(w)
	a.VMULSS(m(RDI, 0), X6, X6)
	a.VBROADCASTSS(X6, Z23)
	a.VFMADD231PS(Z23, Z4, Z24)
}

// q6k4File writes variants/avx512/q6k4_amd64.s:
//
// Q6_K × Q8_K, four rows per pass (VNNI): the four activation vectors, dx
// and the loop overhead are shared by four rows; the per-row block work is
// that of q6kFile (see there for the quant and scale layout).
//
// Register plan: Z0-Z3 activations, Z4/Z5 int sums, Z6-Z8 scratch, Z9 dx,
// Z10-Z13 quants and products, Z14 scale words, Z15 offset term, Z16-Z19
// spread scales, Z20-Z23 the rows' float sums, Z26-Z31 constants; BX = 0 as
// a null index. The scale spreading table is tables_amd64.go's ·q6kScaleIdx.
func q6k4File() {
	fourRowKernel("q6kRows4VNNI", q6kBytes, q6kConstants, "group6", "block6",
		[4]VecPhysical{Z20, Z21, Z22, Z23}, q6k4Activations, q6k4RowBlock)
}

func q6k4Activations() { mQ6k4Activations.use(q6k4ActivationsBody) }

func q6k4ActivationsBody() {
	for i := 0; i < 4; i++ {
		a.VMOVDQU8(m(RDI, 4+64*i), zs[i])
	}
	a.VMOVSS(m(RDI, 0), X9)
}

func q6k4RowBlock(b, i Register, acc VecPhysical) {
	mQ6k4Row.use(func() { q6k4RowBody(b, i, acc) }, mi(b, i, 0), acc)
}

func q6k4RowBody(b, i Register, acc VecPhysical) {
	w := func(d int) Mem { return mi(b, i, d) }
	q6kScaleWords(w)
	q6kHalf(w, 0, 128, false, 0, Z0, Z1, Z10, Z11)
	q6kHalf(w, 64, 160, false, 0, Z2, Z3, Z12, Z13)
	products(true)
	q6kOffset(w)
	a.VMULSS(X9, X6, X6)
	a.VBROADCASTSS(X6, Z6)
	a.VFMADD231PS(Z6, Z4, acc)
}

// q4kxFile writes variants/avx512/q4kx_amd64.s:
//
// Q4_K × Q8_K matrix-vector product over activations laid out once per call
// for this kernel (see layoutQ8K): each super-block's 256 quants are four
// 64-byte vectors already paired with the weight nibble vectors, followed by
// the 16 bsums and d, 320 bytes in all. The activation products then take
// their operand straight from memory (no per-row VINSERTI64X4), and the
// 6-bit scales and mins are unpacked in an XMM register (no scalar
// shifting, no GPR→vector broadcast): X1 = [s0-s3, m0-m3, s4-s7, m4-m7].
// The row loop, the scale spread, the quants and the row reduction are
// q4kFile's.
//
// Register plan: Z4/Z5 int accumulators, Z10-Z13 quants and products,
// Z16-Z19 scale words, Z20 the unpacked scales in every 128-bit lane, Y21
// mins, X6/X7 d and dmin, Z22 dmin·dx, Z23 d·dx, Z24 float sum, Z25 float
// mins sum; constants Z31 (0x0f bytes), X9 (0x3f bytes), Z27-Z30 scale
// indices, Y26 min indices, X15 shift counts, X14 select mask.
func q4kxFile() {
	f := form{"xq4k", true, 0, "q4kRowsVNNIX", "func(dst *float32, rows int, w, xa *byte, nb int)", t0, false}
	rowKernel(f, q4kxPrologue, rowLoop{[]VecPhysical{Z24, Z25}, vpxord, q4kxBlock, q4kBytes, 320, func() { rowStore(Z24, Z25) }})
}

// q4kxPrologue loads the x-layout kernels' arguments and constants.
func q4kxPrologue() { mQ4kxPrologue.use(q4kxPrologueBody) }

var mQ4kxPrologue = def512("Q4KX_PROLOGUE",
	"loads the x-layout kernels' arguments (w into SI, xa into R10) and\n// constants: q4kxPrologue.", q4kxPrologueBody)

func q4kxPrologueBody() {
	loadArgsX(RSI, "xa")
	broadcast32(0x0f0f0f0f, Z31)
	broadcast32(0x3f3f3f3f, X9)
	loadRows("q4kxScaleIdx", Z30, Z29, Z28, Z27)
	a.VMOVDQU64(sym("q4kxMinIdx", 0), Y26)
	a.VMOVDQU(sym("q4kxShift", 0), X15)
	a.VMOVDQU(sym("q4kxSel", 0), X14)
}

func q4kxBlock(form) { mQ4kxBlock.use(q4kxBlockBody) }

var mQ4kxBlock = def512("Q4KX_BLOCK",
	"is a Q4_K super-block at SI against the laid-out activations at DI into\n// Z24 and Z25: q4kxBlock.", q4kxBlockBody)

func q4kxBlockBody() {
	a.Comment("Scales and mins: from the dwords A, B, C at 4(SI),",
		"[A&63, B&63, C&15 | (A>>6&3)<<4, C>>4&15 | (B>>6&3)<<4].")
	a.VMOVDQU(m(RSI, 4), X0)
	a.VPSHUFD(Imm(0xa4), X0, X1)
	a.VPSRLVD(X15, X1, X1)
	a.VPSHUFD(Imm(0x44), X0, X2)
	a.VPSRLD(Imm(2), X2, X2)
	a.VPTERNLOGD(Imm(0xe4), X14, X2, X1)
	a.VPANDD(X9, X1, X1)
	a.VSHUFI64X2(Imm(0), Z1, Z1, Z20)
	a.Comment("Mins times bsums into Y21 (int32), then float.")
	a.VPSHUFB(Y26, Y20, Y21)
	a.VPMADDWD(m(RDI, 256), Y21, Y21)
	a.VCVTDQ2PS(Y21, Y21)
	a.Comment("d·dx into Z23, dmin·dx into Y22; the mins term into Y25.")
	a.VMOVD(m(RSI, 0), X6)
	a.VCVTPH2PS(X6, X6)
	a.VMULPS_BCST(m(RDI, 288), X6, X6)
	a.VBROADCASTSS(X6, Z23)
	a.VMOVSHDUP(X6, X7)
	a.VBROADCASTSS(X7, Y22)
	a.VFMADD231PS(Y22, Y21, Y25)
	q4kSpread()
	a.Comment("Quants: four nibble vectors times the laid-out activations.")
	q4kQuants(func(d int) Mem { return m(RSI, d) })
	for i := 0; i < 4; i++ {
		a.VPMADDUBSW(m(RDI, 64*i), zs[10+i], zs[10+i])
	}
	a.VPMADDWD(Z16, Z10, Z4)
	a.VPMADDWD(Z17, Z11, Z5)
	vpdpwssd(Z18, Z12, Z4)
	vpdpwssd(Z19, Z13, Z5)
	a.VPADDD(Z5, Z4, Z4)
	a.VCVTDQ2PS(Z4, Z4)
	a.VFMADD231PS(Z23, Z4, Z24)
}

// The macros of kquant_amd64.h that the kernels above are written in; a
// parameter that stands for instructions is a placeholder in the body, one
// that stands for an operand has a sample that no other operand of the
// body is (R14, R15: a memory operand's base and index).
var (
	mArgs = defTwin("KQ_ARGS(wreg, x)",
		"loads dst, rows, w and the activations x into DX, R8, wreg and R10: loadArgsX.",
		func() { loadArgsBody(R14, "xsample") }, func() []string { return []string{"R14", "xsample"} })
	mNone  = defTwin("NONE", "stands for no instructions, an empty macro argument.", func() {}, nil)
	mZeros = func() map[int]twin {
		ms := map[int]twin{}
		for _, sig := range []string{"ZERO1(op, a)", "ZERO2(op, a, b)", "ZERO4(op, a, b, c, d)"} {
			n := strings.Count(sig, ",")
			body, samples := zeroSample(n)
			ms[n] = defTwin(sig, "clears the registers with op (VPXORD, VPXOR, VXORPS): op r, r, r each.", body, samples)
		}
		return ms
	}()
	mRows = defTwin("KQ_ROWS(prologue, setup, clear, pf, block, wb, xb, store)",
		"is a one-row kernel (rowKernel): prologue and setup, then over the rows R8\n"+
			"// from DX per row clear, per block of wb weight bytes at SI and xb\n"+
			"// activation bytes at DI pf and block, then store.",
		func() {
			placeholder("prologue")
			placeholder("setup")
			rowBody("row", "blk", "done", 100000, 200000, func() { placeholder("clear") },
				func() { placeholder("pf") }, func() { placeholder("block") }, func() { placeholder("store") })
		}, func() []string {
			return []string{"prologue", "setup", "clear", "pf", "block", "#100000", "#200000", "store"}
		})
	mRowsTop = defTwin("ROWS_TOP(row, done, nboff)",
		"opens a row loop at row: on to done when R8 is zero, else DI = x (R10) and\n// CX = nb (at nboff(FP)).",
		func() { rowsTopBody("row", "done", 100000) }, func() []string { return []string{"row", "done", "#100000"} })
	mRowsEnd = defTwin("ROWS_END(row, done)", "closes a row loop: R8 down, back to row; at done VZEROUPPER and RET.",
		func() { rowsEndBody("row", "done") }, func() []string { return []string{"row", "done"} })
	mDist        = defTwin("KQ_DIST", "loads a prefetch form's distance into R12.", rowDist, nil)
	mQ4kPrologue = def512("Q4K_PROLOGUE", "loads the arguments (w into SI) and the Q4_K constants.",
		func() { loadArgs(RSI); q4kConstants() })
	mQ5kPrologue = def512("Q5K_PROLOGUE", "loads the arguments (w into SI), the Q4_K constants and 16 in the bytes of Z15.",
		q5kPrologueBody)
	mQ6kPrologue = def512("Q6K_PROLOGUE", "loads the arguments (w into SI) and the Q6_K constants.",
		func() { loadArgs(RSI); q6kConstants() })
	mPfLines3 = def512("PF_LINES3(op, dist)",
		"prefetches (instruction op) the three lines of a Q4_K block at SI + dist.",
		func() { pfLines(form{prefetch: 3, hint: t0}, R12) }, "PREFETCHT0", "R12")
	mPfLines4 = def512("PF_LINES4(op, dist)",
		"prefetches (instruction op) the four lines of a Q6_K block at SI + dist.",
		func() { pfLines(form{prefetch: 4, hint: t0}, R12) }, "PREFETCHT0", "R12")
	mPfPage = def512("PF_PAGE(op, wb, skip)",
		"is a page form's prefetch of the wb-byte block at SI + R12 (label skip):\n// pagePrefetch.",
		func() { pagePrefetchBody(form{prefetch: 4, hint: t0}, 100000, "skip") }, "PREFETCHT0", "#100000", "skip")
	mFourRows = def512("FOUR_ROWS(bytes, consts, acts, b0, b1, b2, b3, z0, z1, z2, z3)",
		"is a four-row kernel (fourRowKernel) of blocks of bytes bytes: consts, then\n"+
			"// per group of rows per block acts and the rows' blocks b0-b3 into the sums\n"+
			"// z0-z3.",
		func() {
			ph := func(s string) func() { return func() { placeholder(s) } }
			fourRowBody(100000, ph("consts"), "group", "block", [4]VecPhysical{Z14, Z15, Z24, Z25}, ph("acts"),
				[4]func(){ph("b0"), ph("b1"), ph("b2"), ph("b3")})
		}, "#100000", "consts", "acts", "b0", "b1", "b2", "b3", "Z14", "Z15", "Z24", "Z25")
	mProductsBW = def512("PRODUCTS_BW",
		"sums the word pairs Z10-Z13 times the scale words Z16-Z19 into Z4 (AVX-512BW).",
		func() { productsBody(false) })
	mProductsVNNI = def512("PRODUCTS_VNNI",
		"is PRODUCTS_BW through VPDPWSSD (VNNI).", func() { productsBody(true) })
	mLoadRows4 = def512("LOAD_ROWS4(tbl, z0, z1, z2, z3)",
		"loads the four 64-byte rows of the table tbl into z0-z3.",
		func() { loadRowsBody("tblsample", Z0, Z1, Z2, Z3) }, "\u00b7tblsample", "Z0", "Z1", "Z2", "Z3")
	mQ4kConstants = def512("Q4K_CONSTANTS",
		"loads the Q4_K kernels' constants: q4kConstants.", q4kConstantsBody)
	mQ4kHighBits = defTwin("Q4K_HIGH_BITS(src, dst)",
		"ors the top two bits of each byte of src into bits 4-5 of dst's (R13).",
		func() { q4kHighBitsBody(EBX, R11L) }, func() []string { return []string{"BX", "R11"} })
	mQ4kScales = defTwin("Q4K_SCALES",
		"unpacks the 12 scale bytes at 4(SI) into AX = 8 scales, BX = 8 mins.", q4kScalesBody, nil)
	mQ4kQuants = def512("Q4K_QUANTS(w)",
		"loads the 128 quant bytes at 16 w as the nibble vectors Z10-Z13.",
		func() { q4kQuantsBody(func(d int) Mem { return mi(R14, R15, d) }) }, "(R14)(R15*1)")
	mQ4kSpread = def512("Q4K_SPREAD",
		"spreads the scales Z20 over the words Z16-Z19.", q4kSpreadBody)
	mQ4kMinsTerm = def512("Q4K_MINS_TERM",
		"weights the mins Y21 by the bsums at 260(DI), as floats.", q4kMinsTermBody)
	mQ4kProducts = def512("Q4K_PRODUCTS",
		"multiplies the nibble vectors Z10-Z13 by the activations Z0-Z3 (word pairs).", q4kProductsBody)
	mQ4kActivations = def512("Q4K_ACTIVATIONS",
		"loads the Q8_K quants at 4(DI) into Z0-Z3 in the nibble vectors' order.", q4kActivationsBody)
	mQ4k4Activations = def512("Q4K4_ACTIVATIONS",
		"is Q4K_ACTIVATIONS and dx at (DI) into X9 (four-row kernels).", q4k4ActivationsBody)
	mQ6k4Activations = def512("Q6K4_ACTIVATIONS",
		"loads the Q8_K quants at 4(DI) into Z0-Z3 and dx at (DI) into X9 (four-row\n// kernels).", q6k4ActivationsBody)
	mQ4kBlock = def512("Q4K_BLOCK(products)",
		"is a one-row Q4_K super-block at SI into Z24 and Z25 (q4kBlock), its\n// products (PRODUCTS_BW or PRODUCTS_VNNI).",
		func() { q4kBlockBody(func() { placeholder("products") }) }, "products")
	mQ5kQuants = def512("Q5K_QUANTS",
		"loads a Q5_K block's nibbles at 48(SI) as Z10-Z13 and adds each quant's fifth\n// bit (qh at 16(SI), Z15 = 16s): q5kQuants.", q5kQuantsBody)
	mQ5kBlock = def512("Q5K_BLOCK(products)",
		"is Q4K_BLOCK of a one-row Q5_K super-block at SI (Q5K_QUANTS): q5kBlock.",
		func() { kBlockBody(q5kQuants, func() { placeholder("products") }) }, "products")
	mQ4k4Row = def512("Q4K4_ROW(w, acc)",
		"is a four-row kernel's Q4_K super-block at w into the sum acc: q4k4RowBlock.",
		func() { q4k4RowBody(R14, R15, Z14) }, "(R14)(R15*1)", "Z14")
	mQ6kConstants = def512("Q6K_CONSTANTS",
		"loads the Q6_K kernels' constants: q6kConstants.", q6kConstantsBody)
	mQ6kUnpackHalf = def512("Q6K_UNPACK_HALF(w, ql, qh, lo, hi, s0, s1, s1y, s2, s2y)",
		"unpacks the 6-bit quants of half a Q6_K block (ql at ql w, qh at qh w) into\n"+
			"// lo and hi, through s0-s2 (s1y, s2y their YMMs): q6kUnpackHalf.",
		func() {
			q6kUnpackHalfBody(func(d int) Mem { return mi(R14, R15, d) }, 100000, 200000, Z10, Z11, Z20, Z21, Z22)
		}, "(R14)(R15*1)", "#100000", "#200000", "Z10", "Z11", "Z20", "Z21", "Y21", "Z22", "Y22")
	mQ6kScaleWords = def512("Q6K_SCALE_WORDS(w)",
		"spreads the 16 int8 scales at 192 w over Z16-Z19 (words in Y14).",
		func() { q6kScaleWordsBody(func(d int) Mem { return mi(R14, R15, d) }) }, "(R14)(R15*1)")
	mQ6kOffset = def512("Q6K_OFFSET(w)",
		"subtracts the -32 offset term from Z4, as floats; d at 208 w into X6.",
		func() { q6kOffsetBody(func(d int) Mem { return mi(R14, R15, d) }) }, "(R14)(R15*1)")
	mQ6kBlock = def512("Q6K_BLOCK(products)",
		"is a one-row Q6_K super-block at SI into Z24 (q6kBlock), its products\n// (PRODUCTS_BW or PRODUCTS_VNNI).",
		func() { q6kBlockBody(func() { placeholder("products") }) }, "products")
	mQ6k4Row = def512("Q6K4_ROW(w, acc)",
		"is a four-row kernel's Q6_K super-block at w into the sum acc: q6k4RowBlock.",
		func() { q6k4RowBody(R14, R15, Z20) }, "(R14)(R15*1)", "Z20")
)
