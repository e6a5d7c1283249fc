package main

// The fp32 row ops of a decode step (RMSNorm, SiLU·mul, softmax, RoPE) at
// two widths: variants/avx2/ops_amd64.s, 8 lanes a step under a lane mask
// (all ones, then the tail's) through VMASKMOVPS, and
// variants/avx512/ops_amd64.s, 16 lanes under the mask K1. Masked-off
// lanes are neither read nor written, so tails need no scalar code. The
// loops and the float64 sums are one description; the ISA supplies the
// mask, the masked moves, the widening and exp.
//
// exp, AVX2: Cephes' expf with x clamped to [-87.3, 88.3], so that 2^n can
// be built in the exponent bits; beyond the clamp the result is set to 0
// or +Inf (so exp(x) for x in (88.3, 88.72] reads +Inf, not a finite
// value). AVX-512: the same reduction and polynomial, x clamped to [-104,
// 100], then VSCALEFPS multiplies by 2^n, which over- and underflows to
// +Inf and 0 correctly (variants/avx512/exp_amd64.h's, which the
// attention kernels include).

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx2", "ops_amd64.s", func() { opsFile(avx2Ops) })
	register("avx512", "ops_amd64.s", func() { opsFile(avx512Ops) })
}

type opsISA struct {
	suffix string
	lanes  int
	v      func(i int) VecPhysical // vector register i at this width
	// mask sets the lane mask to the first min(cnt, lanes) lanes.
	mask  func(cnt Register)
	load  func(src Mem, dst VecPhysical) // masked, masked-off lanes zero
	store func(src VecPhysical, dst Mem) // masked
	zero  func(VecPhysical)              // of the float64 sums
	avx2  bool
}

var ys = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
var zs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

var avx2Ops = opsISA{
	suffix: "AVX2",
	lanes:  8,
	v:      func(i int) VecPhysical { return ys[i] },
	mask:   func(cnt Register) { tailMask(cnt, 8, Y15) },
	load:   func(src Mem, dst VecPhysical) { a.VMASKMOVPS(src, Y15, dst) },
	store:  func(src VecPhysical, dst Mem) { a.VMASKMOVPS(src, Y15, dst) },
	zero:   func(v VecPhysical) { a.VXORPD(v, v, v) },
	avx2:   true,
}

var avx512Ops = opsISA{
	suffix: "AVX512",
	lanes:  16,
	v:      func(i int) VecPhysical { return zs[i] },
	mask:   func(cnt Register) { a.MOVQ(cnt, RCX); mask16CX(K1) },
	load:   func(src Mem, dst VecPhysical) { a.VMOVUPS_Z(src, K1, dst) },
	store:  func(src VecPhysical, dst Mem) { a.VMOVUPS(src, K1, dst) },
	zero:   func(v VecPhysical) { a.VPXORQ(v, v, v) },
}

// tailMask (AVX2): y = mask of the first min(cnt, lim) lanes, read from
// ·tailMask; clobbers AX, CX.
func tailMask(cnt Register, lim int, y VecPhysical) {
	mTailMask.use(func() { tailMaskBody(cnt, lim, y) }, cnt, hex32(uint32(lim)), y)
}

func tailMaskBody(cnt Register, lim int, y VecPhysical) {
	a.MOVQ(cnt, RCX)
	a.MOVQ(U32(lim), RAX)
	a.CMPQ(RCX, RAX)
	a.CMOVQGT(RAX, RCX)
	a.NEGQ(RCX)
	a.LEAQ(sym("tailMask", 32), RAX)
	a.VMOVDQU(Mem{Base: RAX, Index: RCX, Scale: 4}, y)
}

// mask16CX (AVX-512): k = the low min(CX, 16) bits, for CX ≥ 0; clobbers
// AX, CX.
func mask16CX(k Register) { mMask16CX.use(func() { mask16CXBody(k) }, k) }

func mask16CXBody(k Register) {
	a.MOVQ(U32(16), RAX)
	a.CMPQ(RCX, RAX)
	a.CMOVQGT(RAX, RCX)
	lowBits(k)
}

// lowBits: k = (1 << CX) - 1; clobbers AX.
func lowBits(k Register) { mLowBits.use(func() { lowBitsBody(k) }, k) }

func lowBitsBody(k Register) {
	a.MOVL(U32(1), EAX)
	a.SHLL(CL, EAX)
	a.DECL(EAX)
	a.KMOVW(EAX, k)
}

// expC is entry i of the exp constants ·opsExp (tables_amd64.go): the
// AVX-512 table is the first twelve entries of AVX2's (with other clamp
// bounds), which adds the clamp's results and the sign bit.
func expC(i int) Mem { return sym("opsExp", 4*i) }

const (
	cLog2e, cC1, cC2, cP0 = 0, 1, 2, 3
	cOne, cHi, cLo, cInf  = 9, 10, 11, 12
	c127, cNegInf, cSign  = 13, 14, 15
)

// expAVX2: Y0 = exp(Y0); clobbers Y1-Y5.
func expAVX2() { mExpAVX2.use(expAVX2Body) }

func expAVX2Body() {
	bc := func(i int, y VecPhysical) { a.VBROADCASTSS(expC(i), y) }
	a.VMOVAPS(Y0, Y4)
	// The clamp's bound is the first source: VMINPS/VMAXPS return the
	// second where either is NaN, so a NaN stays NaN (the other order
	// turned it into the bound, a finite exp that hid damaged weights).
	bc(cHi, Y5)
	a.VMINPS(Y0, Y5, Y0)
	bc(cLo, Y5)
	a.VMAXPS(Y0, Y5, Y0)
	bc(cLog2e, Y5)
	a.VMULPS(Y5, Y0, Y1)
	a.VROUNDPS(U8(0), Y1, Y1)
	bc(cC1, Y5)
	a.VFNMADD231PS(Y5, Y1, Y0)
	bc(cC2, Y5)
	a.VFNMADD231PS(Y5, Y1, Y0)
	bc(cP0, Y2)
	for i := 1; i < 6; i++ {
		mHornerAVX2.use(func() { hornerAVX2(expC(cP0 + i)) }, 4*(cP0+i))
	}
	a.VMULPS(Y0, Y0, Y3)
	a.VFMADD213PS(Y0, Y3, Y2)
	bc(cOne, Y5)
	a.VADDPS(Y5, Y2, Y2)
	a.VCVTPS2DQ(Y1, Y1)
	a.VPBROADCASTD(expC(c127), Y5)
	a.VPADDD(Y5, Y1, Y1)
	a.VPSLLD(U8(23), Y1, Y1)
	a.VMULPS(Y1, Y2, Y0)
	bc(cHi, Y5)
	a.VCMPPS(U8(0x1e), Y5, Y4, Y1)
	bc(cInf, Y5)
	a.VBLENDVPS(Y1, Y5, Y0, Y0)
	bc(cLo, Y5)
	a.VCMPPS(U8(0x11), Y5, Y4, Y1)
	a.VANDNPS(Y0, Y1, Y0)
}

// expConstsAVX512 broadcasts the AVX-512 table into Z31 (log2e) down to
// Z20 (lo).
// hornerAVX2 is a step of expAVX2's polynomial: Y2 = Y2·Y0 + the
// coefficient c.
func hornerAVX2(c Mem) {
	a.VBROADCASTSS(c, Y5)
	a.VFMADD213PS(Y5, Y0, Y2)
}

func expConstsAVX512() { mExpConstsAVX512.use(expConstsAVX512Body) }

func expConstsAVX512Body() {
	for i := 0; i < 12; i++ {
		a.VBROADCASTSS(expC(i), zs[31-i])
	}
}

// expAVX512: Z0 = exp(Z0); clobbers Z1-Z3.
func expAVX512() { mExpAVX512.use(expAVX512Body) }

func expAVX512Body() {
	a.VMINPS(Z21, Z0, Z0)
	a.VMAXPS(Z20, Z0, Z0)
	a.VMULPS(Z31, Z0, Z1)
	a.VRNDSCALEPS(U8(0), Z1, Z1)
	a.VFNMADD231PS(Z30, Z1, Z0)
	a.VFNMADD231PS(Z29, Z1, Z0)
	a.VMOVAPS(Z28, Z2)
	for _, z := range []VecPhysical{Z27, Z26, Z25, Z24, Z23} {
		a.VFMADD213PS(z, Z0, Z2)
	}
	a.VMULPS(Z0, Z0, Z3)
	a.VFMADD213PS(Z0, Z3, Z2)
	a.VADDPS(Z22, Z2, Z2)
	a.VSCALEFPS(Z1, Z2, Z0)
}

// opsISAOf is the ops' ISA of the package being written.
func opsISAOf() opsISA {
	if curPkg == "avx2" {
		return avx2Ops
	}
	return avx512Ops
}

// The ops' macros of the packages' headers.
var (
	mTailMask = def2("TAIL_MASK(cnt, lim, y)",
		"sets y to the mask of the first min(cnt, lim) lanes, from ·tailMask\n// (clobbers AX, CX): tailMask.",
		func() { tailMaskBody(R14, 0x77777777, Y14) }, "R14", "0x77777777", "Y14")
	mMask16CX = def512("MASK16_CX_K(k)", "sets k to the low min(CX, 16) bits (clobbers AX, CX): mask16CX.",
		func() { mask16CXBody(K7) }, "K7")
	mLowBits = def512("LOW_BITS(k)", "sets k to (1 << CX) - 1 (clobbers AX): lowBits.",
		func() { lowBitsBody(K7) }, "K7")
	mHornerAVX2 = def2("HORNER_AVX2(off)", "is Y2 = Y2·Y0 + the coefficient at ·opsExp+off (expAVX2's polynomial).",
		func() { hornerAVX2(sym("opsExp", 100000)) }, "#100000")
	mExpAVX2         = def2("EXP_AVX2", "is Y0 = exp(Y0), clobbering Y1-Y5: expAVX2.", expAVX2Body)
	mExpConstsAVX512 = def512("EXP_CONSTS_AVX512",
		"broadcasts the exp constants into Z31 (log2e) down to Z20 (lo): expConstsAVX512.", expConstsAVX512Body)
	mExpAVX512 = def512("EXP_AVX512", "is Z0 = exp(Z0), clobbering Z1-Z3: expAVX512.", expAVX512Body)
	mWidenPD   = defTwin("WIDEN_PD", "widens the low and high halves of v0 to doubles in v1, v2: widenPD.",
		func() { widenPDBody(opsISAOf()) }, nil)
	mLoopHead = defTwin("LOOP_HEAD(label)",
		"starts a masked loop at label: the lane mask of the BX values left (maskedLoop).",
		func() { loopHeadBody(opsISAOf(), "label") }, func() []string { return []string{"label"} })
	mLoopTails = map[int]twin{
		1: defTwin("LOOP_TAIL1(label, p)", "ends a masked loop: p a vector on, BX the lanes down, again while BX > 0.",
			func() { loopTailBody(opsISAOf(), "label", []Register{R14}) },
			func() []string { return []string{"label", "R14"} }),
		3: defTwin("LOOP_TAIL3(label, p, q, r)", "is LOOP_TAIL1 stepping the pointers p, q and r.",
			func() { loopTailBody(opsISAOf(), "label", []Register{R13, R14, R15}) },
			func() []string { return []string{"label", "R13", "R14", "R15"} }),
	}
	mRopeHead = defTwin("ROPE_HEAD", "starts a head: BX = pairs, R11 cos, R12 sin (ropeHead).",
		func() { ropeHeadBody(false) }, nil)
	mRopeHeadDI = defTwin("ROPE_HEAD_DI", "is ROPE_HEAD and DI = SI.", func() { ropeHeadBody(true) }, nil)
	mHsumPD     = defTwin("HSUM_PD", "sums the doubles of v10 and v11 into X10: hsumPD.",
		func() { hsumPDBody(opsISAOf()) }, nil)
)

func opsFile(isa opsISA) {
	rmsNorm(isa)
	siluMul(isa)
	softmax(isa)
	ropePairs(isa)
	ropeNeoX(isa)
}

// maskedLoop: label: mask(BX); body; step the pointers by a vector, BX by
// the lanes; again while BX > 0.
func maskedLoop(isa opsISA, label string, ptrs []Register, body func()) {
	mLoopHead.use(func() { loopHeadBody(isa, label) }, label)
	body()
	tail := func() { loopTailBody(isa, label, ptrs) }
	args := []any{label}
	for _, p := range ptrs {
		args = append(args, p)
	}
	if m, ok := mLoopTails[len(ptrs)]; ok {
		m.use(tail, args...)
		return
	}
	tail()
}

func loopHeadBody(isa opsISA, label string) {
	a.Label(label)
	isa.mask(RBX)
}

func loopTailBody(isa opsISA, label string, ptrs []Register) {
	for _, p := range ptrs {
		a.ADDQ(imm(4*isa.lanes), p)
	}
	a.SUBQ(imm(isa.lanes), RBX)
	a.JG(LabelRef(label))
}

// widenPD: v1, v2 = the low and high halves of v0 widened to double.
func widenPD(isa opsISA) { mWidenPD.use(func() { widenPDBody(isa) }) }

func widenPDBody(isa opsISA) {
	v := isa.v
	if isa.avx2 {
		a.VCVTPS2PD(X0, Y1)
		a.VEXTRACTF128(U8(1), Y0, X2)
		a.VCVTPS2PD(X2, Y2)
		return
	}
	a.VCVTPS2PD(Y0, v(1))
	a.VEXTRACTF64X4(U8(1), v(0), Y2)
	a.VCVTPS2PD(Y2, v(2))
}

// hsumPD: X10 = the sum of the doubles of v10 and v11.
func hsumPD(isa opsISA) { mHsumPD.use(func() { hsumPDBody(isa) }) }

func hsumPDBody(isa opsISA) {
	v := isa.v
	a.VADDPD(v(11), v(10), v(10))
	if !isa.avx2 {
		a.VEXTRACTF64X4(U8(1), Z10, Y11)
		a.VADDPD(Y11, Y10, Y10)
	}
	a.VEXTRACTF128(U8(1), Y10, X11)
	a.VADDPD(X11, X10, X10)
	a.VPERMILPD(U8(1), X10, X11)
	a.VADDSD(X11, X10, X10)
}

func rmsNorm(isa opsISA) {
	v := isa.v
	text("rmsNorm"+isa.suffix, "func(dst, x, w *float32, n int, eps float32)")
	a.MOVQ(param("x", 8), RSI)
	a.MOVQ(param("n", 24), RBX)
	isa.zero(v(10))
	isa.zero(v(11))
	maskedLoop(isa, "rmsSquares", []Register{RSI}, func() {
		isa.load(m(RSI, 0), v(0))
		widenPD(isa)
		a.VFMADD231PD(v(1), v(1), v(10))
		a.VFMADD231PD(v(2), v(2), v(11))
	})
	hsumPD(isa)
	a.MOVQ(param("n", 24), RBX)
	a.VCVTSI2SDQ(RBX, X12, X12)
	a.VDIVSD(X12, X10, X10)
	a.VCVTSD2SS(X10, X10, X10)
	a.VADDSS(param("eps", 32), X10, X10)
	a.VSQRTSS(X10, X10, X10)
	if isa.avx2 {
		a.VBROADCASTSS(expC(cOne), X12)
	} else {
		a.MOVL(U32(0x3f800000), EAX)
		a.VMOVD(EAX, X12)
	}
	a.VDIVSS(X10, X12, X10)
	a.VBROADCASTSS(X10, v(10))
	a.MOVQ(param("dst", 0), RDI)
	a.MOVQ(param("x", 8), RSI)
	a.MOVQ(param("w", 16), RDX)
	maskedLoop(isa, "rmsScale", []Register{RSI, RDX, RDI}, func() {
		isa.load(m(RSI, 0), v(0))
		isa.load(m(RDX, 0), v(1))
		a.VMULPS(v(10), v(0), v(0))
		a.VMULPS(v(1), v(0), v(0))
		isa.store(v(0), m(RDI, 0))
	})
	a.VZEROUPPER()
	a.RET()
}

func siluMul(isa opsISA) {
	text("siluMul"+isa.suffix, "func(dst, gate, up *float32, n int)")
	a.MOVQ(param("dst", 0), RDI)
	a.MOVQ(param("gate", 8), RSI)
	a.MOVQ(param("up", 16), RDX)
	a.MOVQ(param("n", 24), RBX)
	// g (Y6 / Z4) / (1 + exp(-g)) · up (Y7 / Z5)
	g, u := Y6, Y7
	if !isa.avx2 {
		g, u = Z4, Z5
		expConstsAVX512()
		a.MOVL(U32(0x80000000), EAX)
		a.VPBROADCASTD(EAX, Z19)
	}
	maskedLoop(isa, "siluLoop", []Register{RSI, RDX, RDI}, func() {
		isa.load(m(RSI, 0), g)
		if isa.avx2 {
			a.VBROADCASTSS(expC(cSign), Y5)
			a.VXORPS(Y5, Y6, Y0)
			expAVX2()
			a.VBROADCASTSS(expC(cOne), Y5)
			a.VADDPS(Y5, Y0, Y0)
		} else {
			a.VPXORD(Z19, Z4, Z0)
			expAVX512()
			a.VADDPS(Z22, Z0, Z0)
		}
		a.VDIVPS(isa.v(0), g, g)
		isa.load(m(RDX, 0), u)
		a.VMULPS(u, g, g)
		isa.store(g, m(RDI, 0))
	})
	a.VZEROUPPER()
	a.RET()
}

func softmax(isa opsISA) {
	v := isa.v
	text("softmax"+isa.suffix, "func(x *float32, n int)")
	a.MOVQ(param("x", 0), RSI)
	a.MOVQ(param("n", 8), RBX)
	// v9 = the running max; v8 = -Inf for the masked-off lanes.
	if isa.avx2 {
		a.VBROADCASTSS(expC(cNegInf), Y8)
	} else {
		a.MOVL(U32(0xff800000), EAX)
		a.VPBROADCASTD(EAX, Z8)
	}
	a.VMOVAPS(v(8), v(9))
	maskedLoop(isa, "softMax", []Register{RSI}, func() {
		if isa.avx2 {
			a.VMASKMOVPS(m(RSI, 0), Y15, Y0)
			a.VBLENDVPS(Y15, Y0, Y8, Y0)
		} else {
			a.VMOVAPS(Z8, Z0)
			a.VMOVUPS(m(RSI, 0), K1, Z0)
		}
		a.VMAXPS(v(0), v(9), v(9))
	})
	// every lane of v9 = the max over its lanes
	if isa.avx2 {
		a.VPERM2F128(U8(1), Y9, Y9, Y0)
		a.VMAXPS(Y0, Y9, Y9)
	} else {
		a.VSHUFF64X2(U8(0x4e), Z9, Z9, Z0)
		a.VMAXPS(Z0, Z9, Z9)
		a.VSHUFF64X2(U8(0xb1), Z9, Z9, Z0)
		a.VMAXPS(Z0, Z9, Z9)
	}
	a.VPERMILPS(U8(0x4e), v(9), v(0))
	a.VMAXPS(v(0), v(9), v(9))
	a.VPERMILPS(U8(0xb1), v(9), v(0))
	a.VMAXPS(v(0), v(9), v(9))
	if !isa.avx2 {
		expConstsAVX512()
	}
	isa.zero(v(10))
	isa.zero(v(11))
	a.MOVQ(param("x", 0), RSI)
	a.MOVQ(param("n", 8), RBX)
	maskedLoop(isa, "softExp", []Register{RSI}, func() {
		isa.load(m(RSI, 0), v(0))
		a.VSUBPS(v(9), v(0), v(0))
		if isa.avx2 {
			expAVX2()
			a.VANDPS(Y15, Y0, Y0)
		} else {
			expAVX512()
			a.VMOVAPS_Z(Z0, K1, Z0)
		}
		isa.store(v(0), m(RSI, 0))
		widenPD(isa)
		a.VADDPD(v(1), v(10), v(10))
		a.VADDPD(v(2), v(11), v(11))
	})
	hsumPD(isa)
	a.MOVQ(U64(0x3ff0000000000000), RAX) // 1.0
	a.VMOVQ(RAX, X12)
	a.VDIVSD(X10, X12, X10)
	a.VCVTSD2SS(X10, X10, X10)
	a.VBROADCASTSS(X10, v(10))
	a.MOVQ(param("x", 0), RSI)
	a.MOVQ(param("n", 8), RBX)
	maskedLoop(isa, "softScale", []Register{RSI}, func() {
		isa.load(m(RSI, 0), v(0))
		a.VMULPS(v(10), v(0), v(0))
		isa.store(v(0), m(RSI, 0))
	})
	a.VZEROUPPER()
	a.RET()
}

const ropeSig = "func(x *float32, nHeads, headDim int, cos, sin *float32)"

// ropeHead starts a head: BX = pairs, R11 cos, R12 sin.
func ropeHead(label string, di bool) {
	a.Label(label)
	m := mRopeHead
	if di {
		m = mRopeHeadDI
	}
	m.use(func() { ropeHeadBody(di) })
}

func ropeHeadBody(di bool) {
	a.MOVQ(param("headDim", 16), RBX)
	a.SHRQ(U8(1), RBX)
	a.MOVQ(param("cos", 24), R11)
	a.MOVQ(param("sin", 32), R12)
	if di {
		a.MOVQ(RSI, RDI)
	}
}

// ropePairs: adjacent pairs (2i, 2i+1), half a vector of pairs per step;
// cos and sin are duplicated across each pair by dup, sin signed [-s, +s]
// by sign, and the pair-swapped x supplies the cross term: out = x·c +
// swap(x)·(∓s).
func ropePairs(isa opsISA) {
	v := isa.v
	text("ropePairs"+isa.suffix, ropeSig)
	a.MOVQ(param("x", 0), RSI)
	a.MOVQ(param("nHeads", 8), R8)
	dup, sign := Y13, Y12
	if isa.avx2 {
		a.VMOVDQU(sym("ropeDup", 0), Y13)
		a.VMOVDQU(sym("ropeSign", 0), Y12)
	} else {
		dup, sign = Z18, Z17
		a.VMOVDQU32(sym("ropeDup", 0), Z18)
		a.VMOVDQU32(sym("ropeSign", 0), Z17)
	}
	half := isa.lanes / 2
	ropeHead("pairsHead", isa.avx2)
	a.Label("pairsStep")
	x := RSI
	if isa.avx2 {
		// Y14 = mask of min(pairs, 4) lanes (for cos, sin); Y15 = twice that.
		x = RDI
		a.MOVQ(RBX, R9)
		a.MOVQ(U32(4), RAX)
		a.CMPQ(R9, RAX)
		a.CMOVQGT(RAX, R9)
		a.MOVQ(R9, RCX)
		a.NEGQ(RCX)
		a.LEAQ(sym("tailMask", 32), RAX)
		a.VMOVDQU(Mem{Base: RAX, Index: RCX, Scale: 4}, Y14)
		a.SHLQ(U8(1), R9)
		tailMask(R9, 8, Y15)
		a.VMASKMOVPS(m(R11, 0), X14, X4)
		a.VMASKMOVPS(m(R12, 0), X14, X5)
	} else {
		// K2 = min(pairs, 8) lanes (cos, sin), K1 twice that.
		a.MOVQ(RBX, RCX)
		a.MOVQ(U32(8), RAX)
		a.CMPQ(RCX, RAX)
		a.CMOVQGT(RAX, RCX)
		lowBits(K2)
		a.SHLL(U8(1), ECX)
		lowBits(K1)
		a.VMOVUPS_Z(m(R11, 0), K2, Y4)
		a.VMOVUPS_Z(m(R12, 0), K2, Y5)
	}
	a.VPERMPS(v(4), dup, v(6))
	a.VPERMPS(v(5), dup, v(7))
	if isa.avx2 {
		a.VXORPS(sign, v(7), v(7))
	} else {
		a.VPXORD(sign, v(7), v(7))
	}
	isa.load(m(x, 0), v(0))
	a.VPERMILPS(U8(0xb1), v(0), v(1))
	a.VMULPS(v(6), v(0), v(0))
	a.VFMADD231PS(v(7), v(1), v(0))
	isa.store(v(0), m(x, 0))
	a.ADDQ(imm(4*half), R11)
	a.ADDQ(imm(4*half), R12)
	a.ADDQ(imm(4*isa.lanes), x)
	a.SUBQ(imm(half), RBX)
	a.JG(LabelRef("pairsStep"))
	if isa.avx2 {
		a.MOVQ(param("headDim", 16), RAX)
		a.LEAQ(Mem{Base: RSI, Index: RAX, Scale: 4}, RSI)
	} else {
		a.Comment("SI overshot the head when the pair count is not a multiple of 8.")
		a.MOVQ(param("headDim", 16), RBX)
		a.SHRQ(U8(1), RBX)
		a.ADDQ(U8(7), RBX)
		a.ANDQ(I8(-8), RBX)
		a.MOVQ(param("headDim", 16), RAX)
		a.SHRQ(U8(1), RAX)
		a.SUBQ(RAX, RBX)
		a.SHLQ(U8(3), RBX)
		a.SUBQ(RBX, RSI)
	}
	a.DECQ(R8)
	a.JNZ(LabelRef("pairsHead"))
	a.VZEROUPPER()
	a.RET()
}

// ropeNeoX: NeoX halves (i, i+headDim/2), a vector of pairs per step.
func ropeNeoX(isa opsISA) {
	v := isa.v
	text("ropeNeoX"+isa.suffix, ropeSig)
	a.MOVQ(param("x", 0), RSI)
	a.MOVQ(param("nHeads", 8), R8)
	a.MOVQ(param("headDim", 16), R9)
	a.SHLQ(U8(1), R9) // half a head in bytes
	ropeHead("neoxHead", true)
	maskedLoop(isa, "neoxStep", []Register{R11, R12, RDI}, func() {
		isa.load(m(R11, 0), v(4))
		isa.load(m(R12, 0), v(5))
		isa.load(m(RDI, 0), v(0))
		isa.load(mi(RDI, R9, 0), v(1))
		a.VMULPS(v(4), v(0), v(2))
		a.VFNMADD231PS(v(5), v(1), v(2))
		a.VMULPS(v(5), v(0), v(3))
		a.VFMADD231PS(v(4), v(1), v(3))
		isa.store(v(2), m(RDI, 0))
		isa.store(v(3), mi(RDI, R9, 0))
	})
	a.LEAQ(Mem{Base: RSI, Index: R9, Scale: 2}, RSI)
	a.DECQ(R8)
	a.JNZ(LabelRef("neoxHead"))
	a.VZEROUPPER()
	a.RET()
}
