package main

// The AVX-512 Q8_0 × Q8_0 matvecs of variants/avx512 (see q80File).

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() { register("avx512", "q80_amd64.s", q80File) }

// q80File writes variants/avx512/q80_amd64.s:
//
// Q8_0 × Q8_0 matrix-vector product, one row at a time, two 34-byte blocks
// per 512-bit vector (block a in bytes 0-31, block b in 32-63).
//
// Signed × signed bytes go through the sign trick: |w| (unsigned) times x
// with the sign of w moved onto it (VPMOVB2M + masked VPSUBB), so that
// VPMADDUBSW (or VPDPBUSD) sees unsigned × signed. It needs x ≠ -128, which
// ggml's Q8_0 quantizer guarantees (it rounds x/d with d = amax/127); w may
// be -128 (|-128| = 128 as unsigned). The int32 lanes of block a and b are
// scaled by their d_w·d_x, spread by VPERMPS, into float32 accumulators.
//
// Register plan: Z0/Z1 weights and |w|, Z2 x, Z3 signed x, Z4/Z5 int sums,
// Z6-Z8 scales, Z24 float sum, Z28 zero, Z29 scale spread, Z30 ones (words).
func q80File() {
	q80Kernel("q80RowsAVX512", "q80", false)
	q80Kernel("q80RowsVNNI", "vq80", true)
}

// The Q8_0 kernels' macros of kquant_amd64.h.
var (
	mQ80Rows = def512("Q80_ROWS(dot)",
		"is a Q8_0 matvec (q80Kernel), its products dot (Q80_DOT_BW or Q80_DOT_VNNI).",
		func() { q80Body("q80", func() { placeholder("dot") }) }, "dot")
	mQ80Sign  = def512("Q80_SIGN", "is the sign trick: |w| (Z0) into Z1, x (Z2) with the signs of w into Z3.", q80SignBody)
	mQ80DotBW = def512("Q80_DOT_BW",
		"is the int32 lanes of |w| (Z1) times the signed x (Z3) in Z4: q80Dot.", func() { q80DotBody(false) })
	mQ80DotVNNI = def512("Q80_DOT_VNNI",
		"is Q80_DOT_BW through VPDPBUSD.", func() { q80DotBody(true) })
	mQ80Scale = def512("Q80_SCALE",
		"scales the int32 lanes Z4 by the fp16 scales AX, BX into Z24: q80Scale.", q80ScaleBody)
	mQ80Scales = def512("Q80_SCALES(p, r)",
		"loads the fp16 scales of the blocks at p and p+34 into the words of r.",
		func() { q80ScalesBody(R14, EBX) }, "R14", "BX")
)

// q80Dot: the int32 lanes of |w| (Z1) · signed x (Z3) in Z4, after the
// sign trick on Z0 (w) and Z2 (x).
func q80Dot(vnni bool) {
	if vnni {
		mQ80DotVNNI.use(func() { q80DotBody(true) })
	} else {
		mQ80DotBW.use(func() { q80DotBody(false) })
	}
}

func q80DotBody(vnni bool) {
	mQ80Sign.use(q80SignBody)
	if vnni {
		a.VPXORD(Z4, Z4, Z4)
		vpdpbusd(Z3, Z1, Z4)
		return
	}
	a.VPMADDUBSW(Z3, Z1, Z4)
	a.VPMADDWD(Z30, Z4, Z4)
}

// q80SignBody is the sign trick: |w| (Z0) into Z1, x (Z2) with w's signs
// into Z3.
func q80SignBody() {
	a.VPMOVB2M(Z0, K1)
	a.VPABSB(Z0, Z1)
	a.VMOVDQA64(Z2, Z3)
	a.VPSUBB(Z2, Z28, K1, Z3)
}

// q80Scale scales the int32 lanes in Z4 by the fp16 scales in AX (w) and
// BX (x), spread by Z29 over the two blocks, into Z24.
func q80Scale() { mQ80Scale.use(q80ScaleBody) }

func q80ScaleBody() {
	a.VMOVD(EAX, X6)
	a.VMOVD(EBX, X7)
	a.VCVTPH2PS(X6, X6)
	a.VCVTPH2PS(X7, X7)
	a.VMULPS(X7, X6, X6)
	a.VPERMPS(Z6, Z29, Z8)
	a.VCVTDQ2PS(Z4, Z4)
	a.VFMADD231PS(Z8, Z4, Z24)
}

// q80Scales loads the fp16 scales of blocks a and b at p into the low and
// high words of r.
func q80Scales(p Register, r GPPhysical) {
	mQ80Scales.use(func() { q80ScalesBody(p, r) }, p, r)
}

func q80ScalesBody(p Register, r GPPhysical) {
	a.MOVWLZX(m(p, 0), r)
	a.MOVWLZX(m(p, 34), R11L)
	a.SHLL(Imm(16), R11L)
	a.ORL(R11L, r)
}

func q80Kernel(name, p string, vnni bool) {
	text(name, rowSig)
	dot := func() { q80Dot(vnni) }
	if mQ80Rows.here() {
		d, _ := oneLine(dot)
		mQ80Rows.use(nil, d)
		return
	}
	q80Body(p, dot)
}

// q80Body is q80Kernel after its TEXT line, its labels prefixed with p
// and its products dot.
func q80Body(p string, dot func()) {
	loadArgs(RSI)
	a.VPXORD(Z28, Z28, Z28)
	a.VMOVDQU64(sym("q80Spread", 0), Z29)
	broadcast32(0x00010001, Z30)
	row, pair, single, store, done := p+"Row", p+"Pair", p+"Single", p+"Store", p+"Done"
	rowsTop(row, done, 32)
	a.VPXORD(Z24, Z24, Z24)
	a.SHRQ(Imm(1), RCX)
	a.JZ(LabelRef(single))
	a.Label(pair)
	a.VMOVDQU8(m(RSI, 2), Y0)
	a.VINSERTI64X4(Imm(1), m(RSI, 36), Z0, Z0)
	a.VMOVDQU8(m(RDI, 2), Y2)
	a.VINSERTI64X4(Imm(1), m(RDI, 36), Z2, Z2)
	q80Scales(RSI, EAX)
	q80Scales(RDI, EBX)
	dot()
	q80Scale()
	a.ADDQ(Imm(68), RSI)
	a.ADDQ(Imm(68), RDI)
	a.DECQ(RCX)
	a.JNZ(LabelRef(pair))
	a.Label(single)
	// The last block alone (upper half zero, its scale zero).
	a.MOVQ(param("nb", 32), RCX)
	a.ANDQ(Imm(1), RCX)
	a.JZ(LabelRef(store))
	a.VMOVDQU8(m(RSI, 2), Y0)
	a.VMOVDQU8(m(RDI, 2), Y2)
	a.MOVWLZX(m(RSI, 0), EAX)
	a.MOVWLZX(m(RDI, 0), EBX)
	dot()
	q80Scale()
	a.ADDQ(Imm(34), RSI)
	a.Label(store)
	rowStore(Z24, nil)
	rowsEnd(row, done)
}
