package main

// The batched K-quant products of variants/avx512 (op matvec_batch/q4_k and
// /q6_k, a Batch's decode rows): Q4_K or Q6_K weight rows read as stored,
// against T tokens' Q8_K activations at once (T = 1 … 8, a kernel each).
// Each super-block of a weight row is loaded and unpacked once — nibbles,
// scales spread over words, d and dmin — and then multiplied into every
// token's products, so the weights stream from memory once for the batch
// and the unpacking is shared by its tokens.
//
// Every token's arithmetic is the same instruction sequence whatever T is
// and wherever the token sits in the group: a token's result depends only
// on its own activations and the weights, bit for bit (the op's contract,
// which the conformance suite checks). The products of a super-block are
// exact int32 lanes (VPMADDUBSW, then VPDPWSSD by the sub-block scales, as
// the matvecs do), scaled to float once per super-block and token.
//
// Activations come laid out by the Go side (qbatch_amd64.go): per
// super-block the group's tokens back to back, qbTok bytes each — the 256 quants as four 64-byte vectors (for
// Q4_K in the chunk order 0 2 1 3 4 6 5 7 that meets the nibble vectors,
// for Q6_K in order), the 16 bsums, then dx — so that every activation
// operand is a memory operand at a constant displacement. Each super-block
// multiplies d (and dmin) by every token's dx, fl(d·dx) as the matvec's
// factor. (Tried and dropped: the group's factors in one multiply of a
// line of its dx values, into a table on the stack that the tokens' FMAs
// broadcast from — a multiply a token fewer, faster with the weights in
// cache, slower in the engine: 3B, 2 threads, 4/8/16 streams 47-52/49-54/
// 55 tok/s without the table, 39/44-48/47-50 with it, and 10 instead of
// 18 for one stream.)

import (
	"fmt"

	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx512", "q4kb_amd64.s", func() { kbatchFile(q4kBatchFormat) })
	register("avx512", "q6kb_amd64.s", func() { kbatchFile(q6kBatchFormat) })
}

// Layout of one token's super-block of activations (qbatch_amd64.go's
// qbTok, qbBsums, qbD).
const (
	qbTok   = 320
	qbBsums = 256
	qbD     = 288
	qbMaxT  = 8
)

const (
	kbatchSig   = "func(w, x *byte, dst *float32, ldd, rows, nb, sbStride int)"
	kbatchPfSig = "func(w, x *byte, dst *float32, ldd, rows, nb, sbStride, dist int)"
)

// A kbatchFormat is one weight type's part of the batched kernel.
type kbatchFormat struct {
	name       string // function name prefix, e.g. "q4kBatch"
	label      string
	blockBytes int
	constants  func()
	mins       bool              // the tokens keep a mins sum (kbMins) beside their sums
	unpack     func()            // one super-block at SI: quants, scales, d
	token      func(disp, t int) // token t at disp(DI) into its sums
}

// kbatchFile writes one kernel per token count, and each again with
// software prefetches of the weights dist bytes ahead (the "P" forms: a
// PREFETCHT0 per cache line of each super-block, R13 = dist).
func kbatchFile(f kbatchFormat) {
	for _, pf := range []bool{false, true} {
		for t := 1; t <= qbMaxT; t++ {
			kbatchKernel(f, t, pf)
		}
	}
}

// kbatchKernel: rows rows of nb super-blocks at w against T tokens laid out
// at x (token j of super-block b at x + b·sbStride + j·qbTok), dst[j·ldd/4
// + r] = row r · token j. Rows are back to back, so SI runs through all of
// them; DI restarts at x for each row.
//
// GPRs: SI weights, DI activations, R10 x, DX &dst[0][row], R12 ldd, R8
// rows left, CX super-blocks left; AX, BX, R9, R11, R13 scratch of the
// scale unpacking.
func kbatchKernel(f kbatchFormat, T int, pf bool) {
	name, sig, label := fmt.Sprintf("%s%d", f.name, T), kbatchSig, fmt.Sprintf("%s%d", f.label, T)
	if pf {
		name, sig, label = fmt.Sprintf("%sP%d", f.name, T), kbatchPfSig, fmt.Sprintf("%sp%d", f.label, T)
	}
	text(name, sig)
	a.MOVQ(param("w", 0), RSI)
	a.MOVQ(param("x", 8), R10)
	a.MOVQ(param("dst", 16), RDX)
	a.MOVQ(param("ldd", 24), R12)
	a.MOVQ(param("rows", 32), R8)
	f.constants()
	row, blk, done := label+"Row", label+"Block", label+"Done"
	a.Label(row)
	a.TESTQ(R8, R8)
	a.JZ(LabelRef(done))
	a.MOVQ(R10, RDI)
	a.MOVQ(param("nb", 40), RCX)
	for t := 0; t < T; t++ {
		a.VPXORD(kbAccs[t], kbAccs[t], kbAccs[t])
		if f.mins {
			a.VPXOR(kbMins[t], kbMins[t], kbMins[t])
		}
	}
	a.Label(blk)
	if pf {
		a.MOVQ(param("dist", 56), R9)
		for i := 0; i < (f.blockBytes+63)/64; i++ {
			a.PREFETCHT0(Mem{Base: RSI, Index: R9, Scale: 1, Disp: 64 * i})
		}
	}
	f.unpack()
	for t := 0; t < T; t++ {
		f.token(t*qbTok, t)
	}
	a.ADDQ(imm(f.blockBytes), RSI)
	a.ADDQ(param("sbStride", 48), RDI)
	a.DECQ(RCX)
	a.JNZ(LabelRef(blk))
	a.Comment("Each token's sum of lanes to dst[token][row], reduced as the",
		"one-row matvec reduces its sums (rowStore).")
	a.MOVQ(RDX, RAX)
	for t := 0; t < T; t++ {
		acc, hi := kbAccs[t], kbMins[t]
		if f.mins {
			a.VSUBPS(hi.AsZ(), acc, acc)
		}
		a.VEXTRACTF64X4(U8(1), acc, hi)
		a.VADDPS(hi, acc.AsY(), acc.AsY())
		reduce8(acc.AsY().(VecPhysical), hi.AsX().(VecPhysical), m(RAX, 0))
		if t < T-1 {
			a.ADDQ(R12, RAX)
		}
	}
	a.ADDQ(Imm(4), RDX)
	a.DECQ(R8)
	a.JMP(LabelRef(row))
	a.Label(done)
	a.VZEROUPPER()
	a.RET()
}

// kbAccs are the tokens' float sums; kbMins the Q4_K tokens' mins sums
// (eight lanes, upper halves zero), and the scratch of the reductions.
var (
	kbAccs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7}
	kbMins = []VecPhysical{Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
)

// ---- Q4_K ----
//
// Each token's arithmetic is the one-row avx512-vnni matvec's (q4kBlock):
// the same int32 lanes (exact, whatever their order of summing), each
// converted and fused into the lane sum times fl(d·dx), the mins term
// times fl(dmin·dx) into eight lanes of its own, the two subtracted and
// reduced as rowStore does; a token's outputs are that matvec's bit for bit.
//
// Register plan: Z0-Z7 token sums, Y8-Y15 token mins sums, Z16-Z19 scale
// words, Z20 scales, Y21 min words, Z22 d, Y23 dmin, Z24-Z27 nibble
// vectors, Z28/Z29 a token's word pairs and factors, Z30 its products, Y31
// its mins term. The tables (tables_amd64.go's ·q4kScaleIdx, ·q4kMinIdx) and
// the nibble mask are memory operands.
var q4kBatchFormat = kbatchFormat{
	name: "q4kBatch", label: "q4kb", blockBytes: q4kBytes, mins: true,
	constants: func() {},
	unpack: func() {
		q4kScales()
		a.VPBROADCASTQ(RAX, Z20)
		a.VPBROADCASTQ(RBX, Y21)
		a.VPSHUFB(sym("q4kMinIdx", 0), Y21, Y21)
		for i, z := range []VecPhysical{Z16, Z17, Z18, Z19} {
			a.VPSHUFB(sym("q4kScaleIdx", 64*i), Z20, z)
		}
		a.VMOVD(m(RSI, 0), X22)
		a.VCVTPH2PS(X22, X22)
		a.VMOVSHDUP(X22, X23)
		a.VBROADCASTSS(X22, Z22)
		a.VBROADCASTSS(X23, Y23)
		for i, off := range []int{16, 80} {
			lo, hi := []VecPhysical{Z24, Z26}[i], []VecPhysical{Z25, Z27}[i]
			a.VMOVDQU8(m(RSI, off), lo)
			a.VPSRLW(Imm(4), lo, hi)
			a.VPANDD_BCST(sym("q4kbNibble", 0), lo, lo)
			a.VPANDD_BCST(sym("q4kbNibble", 0), hi, hi)
		}
	},
	token: func(disp, t int) {
		p := []VecPhysical{Z28, Z29, Z28, Z29}
		for i, q := range []VecPhysical{Z24, Z25, Z26, Z27} {
			a.VPMADDUBSW(m(RDI, disp+64*i), q, p[i])
			if i == 0 {
				a.VPMADDWD(Z16, p[i], Z30)
			} else {
				vpdpwssd([]VecPhysical{Z16, Z17, Z18, Z19}[i], p[i], Z30)
			}
		}
		a.VPMADDWD(m(RDI, disp+qbBsums), Y21, Y31)
		a.VCVTDQ2PS(Y31, Y31)
		a.VCVTDQ2PS(Z30, Z30)
		a.VMULPS_BCST(m(RDI, disp+qbD), Z22, Z28)
		a.VFMADD231PS(Z28, Z30, kbAccs[t])
		a.VMULPS_BCST(m(RDI, disp+qbD), Y23, Y29)
		a.VFMADD231PS(Y29, Y31, kbMins[t])
	},
}

// ---- Q6_K ----
//
// Each token's arithmetic is the one-row avx512-vnni matvec's (q6kBlock):
// the same int32 lanes (the −32 offset folded in by one more VPDPWSSD),
// converted and fused into the lane sum times fl(d·dx), reduced as
// rowStore does.
//
// Register plan: Z0-Z7 token sums (Y8-Y15 the reductions' scratch), Z8 d,
// Z10-Z13 quants (0..63), Y14 scale words, Y15 the scale words times −32
// (the quants' offset against the bsums; upper half zero), Z16-Z19 spread
// scale words, Z20-Z23 a token's word pairs (and the unpacking's scratch),
// Z24 its products, Z25 its factor; constants Z31 (0x0f), Z30 (0x30),
// Z26-Z29 scale spreads (tables_amd64.go's ·q6kScaleIdx). The sums' reduction
// reuses Y8-Y15 after the last super-block.
var q6kBatchFormat = kbatchFormat{
	name: "q6kBatch", label: "q6kb", blockBytes: q6kBytes,
	constants: q6kConstants,
	unpack: func() {
		w := func(d int) Mem { return m(RSI, d) }
		q6kScaleWords(w)
		a.VPSLLW(Imm(5), Y14, Y15)
		a.VPXOR(Y9, Y9, Y9)
		a.VPSUBW(Y15, Y9, Y15)
		q6kUnpackHalf(w, 0, 128, Z10, Z11, Z20, Z21, Z22)
		q6kUnpackHalf(w, 64, 160, Z12, Z13, Z20, Z21, Z22)
		a.MOVWLZX(w(208), EAX)
		a.VMOVD(EAX, X8)
		a.VCVTPH2PS(X8, X8)
		a.VBROADCASTSS(X8, Z8)
	},
	token: func(disp, t int) {
		p := []VecPhysical{Z20, Z21, Z22, Z23}
		for i, q := range []VecPhysical{Z10, Z11, Z12, Z13} {
			a.VPMADDUBSW(m(RDI, disp+64*i), q, p[i])
		}
		a.VPMADDWD(Z16, p[0], Z24)
		vpdpwssd(Z17, p[1], Z24)
		vpdpwssd(Z18, p[2], Z24)
		vpdpwssd(Z19, p[3], Z24)
		// The −32 offset: bsums (words 0-15 of the 64 bytes at qbBsums)
		// times −32·scale; words 16-31 meet Y15's zero upper half.
		vpdpwssd(m(RDI, disp+qbBsums), Z15, Z24)
		a.VCVTDQ2PS(Z24, Z24)
		a.VMULPS_BCST(m(RDI, disp+qbD), Z8, Z25)
		a.VFMADD231PS(Z25, Z24, kbAccs[t])
	},
}
