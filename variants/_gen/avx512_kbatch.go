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
	"strings"

	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx512", "q4kb_amd64.s", func() { kbatchFile(q4kBatchFormat) })
	register("avx512", "q5kb_amd64.s", func() { kbatchFile(q5kBatchFormat) })
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
	noPrefetch bool              // no "P" forms
	unpack     func()            // one super-block at SI: quants, scales, d
	token      func(disp, t int) // token t at disp(DI) into its sums
	// The format's macros of kquant_amd64.h: unpack, and the clearing, the
	// products and the store of a token (kbToken's operations).
	unpackM, clearM, tokenM, storeM *asmMacro
}

// kbatchFile writes one kernel per token count, and each again with
// software prefetches of the weights dist bytes ahead (the "P" forms: a
// PREFETCHT0 per cache line of each super-block, R9 = dist).
func kbatchFile(f kbatchFormat) {
	for _, pf := range []bool{false, true} {
		if pf && f.noPrefetch {
			continue
		}
		for t := 1; t <= qbMaxT; t++ {
			kbatchKernel(f, t, pf)
		}
	}
}

// kbatchKernel: rows rows of nb super-blocks at w against T tokens laid out
// at x (token j of super-block b at x + b·sbStride + j·qbTok), dst[j·ldd/4
// + r] = row r · token j. Rows are back to back, so SI runs through all of
// them; DI restarts at x for each row. It is KB_ROWS of the format's
// macros and KB_T<T>, which applies them to the T tokens.
//
// GPRs: SI weights, DI activations, R10 x, DX &dst[0][row], R12 ldd, R8
// rows left, CX super-blocks left; AX, BX, R9, R11, R13 scratch of the
// scale unpacking.
func kbatchKernel(f kbatchFormat, T int, pf bool) {
	name, sig := fmt.Sprintf("%s%d", f.name, T), kbatchSig
	if pf {
		name, sig = fmt.Sprintf("%sP%d", f.name, T), kbatchPfSig
	}
	text(name, sig)
	consts, _ := oneLine(f.constants)
	prefetch := mNone.name()
	if pf {
		lines, _ := oneLine(func() { prefetchLines(form{prefetch: (f.blockBytes + 63) / 64, hint: t0}, R9) })
		prefetch = fmt.Sprintf("%s(%s)", mKbPrefetch.name, lines)
	}
	mKbRows.use(nil, consts, fmt.Sprintf("KB_T%d", T), f.clearM.name, prefetch, f.unpackM.name,
		f.tokenM.name, f.storeM.name, f.blockBytes)
}

// kbatchBody is KB_ROWS: the arguments, consts, then per row the tokens'
// sums cleared (tokens(clear, NONE)), per super-block pf, unpack and the
// tokens' products (token), and the tokens' sums stored (store, with
// KB_NEXT between them).
func kbatchBody() {
	a.MOVQ(param("w", 0), RSI)
	a.MOVQ(param("x", 8), R10)
	a.MOVQ(param("dst", 16), RDX)
	a.MOVQ(param("ldd", 24), R12)
	a.MOVQ(param("rows", 32), R8)
	placeholder("consts")
	rowsTop("row", "done", 40)
	placeholder("tokens(clear, " + mNone.name() + ")")
	a.Label("blk")
	placeholder("pf")
	placeholder("unpack")
	placeholder("tokens(token, " + mNone.name() + ")")
	a.ADDQ(imm(100000), RSI)
	a.ADDQ(param("sbStride", 48), RDI)
	a.DECQ(RCX)
	a.JNZ(LabelRef("blk"))
	a.Comment("Each token's sum of lanes to dst[token][row], reduced as the",
		"one-row matvec reduces its sums (rowStore).")
	a.MOVQ(RDX, RAX)
	placeholder("tokens(store, " + mKbNext.name + ")")
	a.ADDQ(Imm(4), RDX)
	rowsEnd("row", "done")
}

// kbToken are the arguments of a token's operations (the macros
// op(disp, acc, accy, accx, hi, hix, hiz) that KB_T<T> applies): its
// activations' displacement, its sum (ZMM, YMM, XMM) and its mins sum or
// reduction scratch (YMM, XMM, ZMM).
func kbToken(t int) []any {
	acc, hi := kbAccs[t], kbMins[t]
	return []any{t * qbTok, acc, acc.AsY(), acc.AsX(), hi, hi.AsX(), hi.AsZ()}
}

// kbTokenParams are kbToken's parameters and kbTokenSamples their samples:
// token 6, whose registers no operation uses otherwise, at displacement
// 100000.
const kbTokenParams = "(disp, acc, accy, accx, hi, hix, hiz)"

var kbTokenSamples = []string{"#100000", "Z6", "Y6", "X6", "Y14", "X14", "Z14"}

// kbOp defines the token operation name of kquant_amd64.h: body for token
// 6 at displacement 100000.
func kbOp(name, doc string, body func(disp, t int)) *asmMacro {
	return def512(name+kbTokenParams, doc, func() { body(100000, 6) }, kbTokenSamples...)
}

// withMacros is f with its macros, named prefix_UNPACK, _CLEAR, _TOKEN and
// _STORE (format the weight type, products what a token's operation adds).
func (f kbatchFormat) withMacros(prefix, format, products string) kbatchFormat {
	sums := "sum acc"
	if f.mins {
		sums = "sum acc and mins sum hi"
	}
	f.unpackM = def512(prefix+"_UNPACK", "unpacks a "+format+" super-block at SI for the batched kernel's tokens.", f.unpack)
	f.clearM = kbOp(prefix+"_CLEAR", "clears a token's "+sums+".", kbClear(f.mins))
	f.tokenM = kbOp(prefix+"_TOKEN", "adds a token's "+format+" "+products+" at disp(DI) to its "+sums+".", f.token)
	f.storeM = kbOp(prefix+"_STORE", "reduces a token's "+sums+" (their difference) to one float at (AX).", kbStore(f.mins))
	return f
}

// kbClear clears token t's sums (and mins sums, with mins).
func kbClear(mins bool) func(disp, t int) {
	return func(_, t int) {
		a.VPXORD(kbAccs[t], kbAccs[t], kbAccs[t])
		if mins {
			a.VPXOR(kbMins[t], kbMins[t], kbMins[t])
		}
	}
}

// kbStore reduces token t's sum (less its mins sum, with mins) to one
// float at (AX).
func kbStore(mins bool) func(disp, t int) {
	return func(_, t int) {
		acc, hi := kbAccs[t], kbMins[t]
		if mins {
			a.VSUBPS(hi.AsZ(), acc, acc)
		}
		a.VEXTRACTF64X4(U8(1), acc, hi)
		a.VADDPS(hi, acc.AsY(), acc.AsY())
		reduce8(acc.AsY().(VecPhysical), hi.AsX().(VecPhysical), m(RAX, 0))
	}
}

// kbChain is KB_T<T>(op, sep): op of tokens 0 to T-1, sep between them
// (KB_T<T-1>, sep, op of token T-1); the KB_T<T> are a table, one row a
// token.
func kbChain(T int) *asmMacro {
	m := def512(fmt.Sprintf("KB_T%d(op, sep)", T),
		fmt.Sprintf("applies op to the tokens 0-%d, sep between them.", T-1), func() {
			if T > 1 {
				placeholder(fmt.Sprintf("KB_T%d(op, sep)", T-1))
				placeholder("sep")
			}
			s := make([]string, 0, 7)
			for _, x := range kbToken(T - 1) {
				s = append(s, argText(x))
			}
			placeholder("op(" + strings.Join(s, ", ") + ")")
		}, "op", "sep")
	m.row = true
	return m
}

var (
	mKbRows = def512("KB_ROWS(consts, tokens, clear, pf, unpack, token, store, bytes)",
		"is a batched kernel (kbatchKernel) of bytes-byte super-blocks: consts,\n"+
			"// then per row and super-block pf, unpack and the token operations clear,\n"+
			"// token and store, each applied by tokens (KB_T<T>).", kbatchBody,
		"consts", "tokens", "clear", "pf", "unpack", "token", "store", "#100000")
	mKbNext     = def512("KB_NEXT", "steps AX to the next token's row of dst.", func() { a.ADDQ(R12, RAX) })
	mKbPrefetch = def512("KB_PF(lines)",
		"prefetches lines (PF_LINESn at SI + R9), R9 = dist.", func() {
			a.MOVQ(param("dist", 56), R9)
			placeholder("lines")
		}, "lines")
	kbChains = func() []*asmMacro {
		var ms []*asmMacro
		for T := 1; T <= qbMaxT; T++ {
			ms = append(ms, kbChain(T))
		}
		return ms
	}()
)

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
	unpack:    q4kbUnpack,
	token:     q4kbToken,
}.withMacros("Q4KB", "Q4_K", "products and mins term")

// q5kBatchFormat is q4kBatchFormat over Q5_K blocks: its unpacking adds
// the fifth bits (q5kbUnpack); the tokens' operations are Q4_K's macros.
// No prefetching forms.
var q5kBatchFormat = func() kbatchFormat {
	f := q4kBatchFormat
	f.name, f.label, f.blockBytes, f.unpack, f.noPrefetch = "q5kBatch", "q5kb", q5kBytes, q5kbUnpack, true
	f.unpackM = def512("Q5KB_UNPACK", "unpacks a Q5_K super-block at SI for the batched kernel's tokens.", q5kbUnpack)
	return f
}()

func q4kbUnpack() { kbUnpack(16, nil) }

// q5kbUnpack is q4kbUnpack of a Q5_K block (nibbles at 48), each quant's
// fifth bit added after (qh at 16): q5kQuants's test and masked add,
// through Z28 and Z29, free until the tokens' products.
func q5kbUnpack() {
	kbUnpack(48, func() {
		a.VBROADCASTI64X4(m(RSI, 16), Z28)
		a.VPBROADCASTD(sym("q5kSixteen", 0), Z29)
		for i, z := range []VecPhysical{Z24, Z25, Z26, Z27} {
			k := []Register{K1, K2, K3, K4}[i]
			a.VPTESTMB(sym("q5kHighBit", 64*i), Z28, k)
			a.VPADDB(Z29, z, k, z)
		}
	})
}

// kbUnpack unpacks a Q4_K-style super-block at SI, its 128 nibble bytes at
// quants(SI), then runs fifth (when not nil).
func kbUnpack(quants int, fifth func()) {
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
	for i, off := range []int{quants, quants + 64} {
		lo, hi := []VecPhysical{Z24, Z26}[i], []VecPhysical{Z25, Z27}[i]
		a.VMOVDQU8(m(RSI, off), lo)
		a.VPSRLW(Imm(4), lo, hi)
		a.VPANDD_BCST(sym("q4kbNibble", 0), lo, lo)
		a.VPANDD_BCST(sym("q4kbNibble", 0), hi, hi)
	}
	if fifth != nil {
		fifth()
	}
}

func q4kbToken(disp, t int) {
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
	unpack:    q6kbUnpack,
	token:     q6kbToken,
}.withMacros("Q6KB", "Q6_K", "products")

func q6kbUnpack() {
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
}

func q6kbToken(disp, t int) {
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
}
