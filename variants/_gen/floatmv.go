package main

// The float matrix-vector products (F32, F16 and BF16 weights with
// activations of the same type), one row at a time, at two widths: AVX2
// (variants/avx2/float_amd64.s: four 8-lane accumulators over 32 values
// per step, then 8 per step, then a scalar tail) and AVX-512
// (variants/avx512/floatmv_amd64.s: four 16-lane accumulators over 64
// values per step, then 16 (BF16 dot: 32) per step under a K-mask for the
// tail, so any k works and nothing past a row is read). Both share the row
// loop, the main step and the reduction; only the width, the registers
// and the tail differ.

import (
	"fmt"
	"strings"

	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx2", "float_amd64.s", func() {
		for _, t := range []floatType{f32, f16} {
			floatRows(avx2Width, t, t.name+"RowsAVX2", t.name)
		}
	})
	register("avx512", "floatmv_amd64.s", func() {
		for _, t := range []floatType{f32, f16, bf16} {
			floatRows(avx512Width, t, t.name+"RowsAVX512", t.name)
		}
		bf16RowsDot()
	})
}

// width is a vector width with its register plan: acc are the four
// accumulators, w and x the loaded weights and activations (x only where
// they are converted first).
type width struct {
	lanes int // float32 lanes a vector
	acc   [4]VecPhysical
	w, x  [4]VecPhysical
	avx2  bool // unmasked one-vector step and scalar tail, X4 the scalar sum
}

var avx2Width = width{
	lanes: 8,
	acc:   [4]VecPhysical{Y0, Y1, Y2, Y3},
	w:     [4]VecPhysical{Y8, Y9, Y10, Y11},
	x:     [4]VecPhysical{Y12, Y13, Y14, Y15},
	avx2:  true,
}

var avx512Width = width{
	lanes: 16,
	acc:   [4]VecPhysical{Z8, Z9, Z10, Z11},
	w:     [4]VecPhysical{Z0, Z1, Z2, Z3},
	x:     [4]VecPhysical{Z4, Z5, Z6, Z7},
}

// floatType is an element type: its size and how a vector of it is loaded
// as float32 lanes (nil load: f32, used straight from memory by the FMA).
type floatType struct {
	name  string
	size  int
	shift int // log2 size
	load  func(src Mem, dst VecPhysical)
}

var (
	f32  = floatType{"f32", 4, 2, nil}
	f16  = floatType{"f16", 2, 1, func(src Mem, dst VecPhysical) { a.VCVTPH2PS(src, dst) }}
	bf16 = floatType{"bf16", 2, 1, func(src Mem, dst VecPhysical) {
		// bf16 → f32 is a 16-bit shift into the high half of each lane.
		a.VPMOVZXWD(src, dst)
		a.VPSLLD(Imm(16), dst, dst)
	}}
)

const floatSig = "func(dst *float32, rows int, w, xq *byte, k int)"

// floatArgs: DX dst, R8 rows, R12 the row, R10 x, R13 a row's bytes.
func floatArgs(shift int) {
	mFloatArgs.use(func() { floatArgsBody(shift) }, shift)
}

func floatArgsBody(shift int) {
	loadArgsX(R12, "xq")
	a.MOVQ(param("k", 32), R13)
	a.SHLQ(Imm(uint64(shift)), R13)
}

// floatRowStart: SI and DI at the row and x, BX = k, sums cleared.
func floatRowStart(wd width) { mFloatRowStart.use(func() { floatRowStartBody(wd) }) }

func floatRowStartBody(wd width) {
	a.MOVQ(R12, RSI)
	a.MOVQ(R10, RDI)
	a.MOVQ(param("k", 32), RBX)
	if wd.avx2 {
		zeroRegs(func(s VecPhysical) { a.VXORPS(s, s, s) }, wd.acc[:]...)
	} else {
		zeroRegs(vpxord, wd.acc[:]...)
	}
	if wd.avx2 {
		a.VXORPS(X4, X4, X4)
	}
}

// floatStore adds the four sums (and X4, AVX2) into one float at (DX).
func floatStore(wd width) { mFloatStore.use(func() { floatStoreBody(wd) }) }

func floatStoreBody(wd width) {
	s := wd.acc
	a.VADDPS(s[1], s[0], s[0])
	a.VADDPS(s[3], s[2], s[2])
	a.VADDPS(s[2], s[0], s[0])
	lo, hi := s[0], s[1]
	if !wd.avx2 {
		a.VEXTRACTF64X4(Imm(1), lo, hi.AsY())
		a.VADDPS(hi.AsY(), lo.AsY(), lo.AsY())
	}
	hsum8(lo.AsY().(VecPhysical), hi.AsX().(VecPhysical))
	if wd.avx2 {
		a.VADDSS(X4, lo.AsX(), lo.AsX())
	}
	a.VMOVSS(lo.AsX(), m(RDX, 0))
	a.ADDQ(Imm(4), RDX)
}

// step emits one loop stage: while BX >= n (or, for a masked stage, while
// BX > 0), body, advance SI and DI by bytes, BX by n; then on to next.
func step(label, next string, n, bytes int, masked bool, body func()) {
	m := mFloatStep
	if masked {
		m = mFloatStepMasked
	}
	if b, ok := oneLine(body); ok && m.here() {
		m.use(nil, label, next, n, bytes, b)
		return
	}
	stepBody(label, next, n, bytes, masked, body)
}

func stepBody(label, next string, n, bytes int, masked bool, body func()) {
	a.Label(label)
	if masked {
		a.TESTQ(RBX, RBX)
		a.JLE(LabelRef(next))
	} else {
		a.CMPQ(RBX, imm(n))
		a.JLT(LabelRef(next))
	}
	if b, ok := oneLine(body); ok && mStepRest.here() {
		mStepRest.use(nil, label, n, bytes, b)
		return
	}
	stepRest(label, n, bytes, body)
}

// stepRest is a stage after its test: body, SI and DI bytes on, BX n
// down, back to label.
func stepRest(label string, n, bytes int, body func()) {
	body()
	a.ADDQ(imm(bytes), RSI)
	a.ADDQ(imm(bytes), RDI)
	a.SUBQ(imm(n), RBX)
	a.JMP(LabelRef(label))
}

// maskN sets K1 to the low min(BX, lim) bits; clobbers AX, CX.
func maskN(lim int) { mMaskN.use(func() { maskNBody(lim) }, hex32(uint32(lim))) }

func maskNBody(lim int) {
	a.MOVQ(RBX, RCX)
	a.MOVQ(U32(lim), RAX)
	a.CMPQ(RCX, RAX)
	a.CMOVQGT(RAX, RCX)
	a.MOVQ(U32(1), RAX)
	a.SHLQ(CL, RAX)
	a.DECQ(RAX)
	a.KMOVD(EAX, K1)
}

// floatLoop is the arguments' loads (k << shift bytes a row) and the row
// loop around the stages, which end at p+"Store".
func floatLoop(wd width, p string, shift int, stages func()) {
	args := func() { floatArgs(shift) }
	if mFloatRows.here() {
		ls := capture(stages)
		ar, ok := oneLine(args)
		ok = ok && len(ls) <= 3
		for _, l := range ls {
			ok = ok && !strings.ContainsAny(strings.SplitN(l, "(", 2)[0], " ,")
		}
		if ok {
			xs := []any{ar, p + "Row", p + "Store"}
			for i := 0; i < 3; i++ {
				if i < len(ls) {
					xs = append(xs, ls[i])
				} else {
					xs = append(xs, mNone.name())
				}
			}
			mFloatRows.use(nil, xs...)
			return
		}
	}
	args()
	floatLoopBody(wd, p, stages)
}

func floatLoopBody(wd width, p string, stages func()) {
	a.Label(p + "Row")
	floatRowStart(wd)
	stages()
	a.Label(p + "Store")
	floatStore(wd)
	a.ADDQ(R13, R12)
	a.DECQ(R8)
	a.JNZ(LabelRef(p + "Row"))
	a.VZEROUPPER()
	a.RET()
}

// fma is acc += w·x for one vector: x loaded and converted first where t
// converts, else read by the FMA straight from memory.
func fma(t floatType, wsrc, xsrc Mem, w, x, acc VecPhysical) {
	if t.load == nil {
		a.VMOVUPS(wsrc, w)
		a.VFMADD231PS(xsrc, w, acc)
		return
	}
	t.load(wsrc, w)
	t.load(xsrc, x)
	a.VFMADD231PS(x, w, acc)
}

func floatRows(wd width, t floatType, name, p string) {
	text(name, floatSig)
	vec := wd.lanes * t.size // bytes of one vector of t
	floatLoop(wd, p, t.shift, func() {
		tail := p + "Tail"
		if wd.avx2 {
			tail = p + "Eight"
		}
		step(p+"Main", tail, 4*wd.lanes, 4*vec, false, func() { floatMain(wd, t) })
		if wd.avx2 {
			step(tail, p+"One", wd.lanes, vec, false, func() { floatOne(wd, t) })
			floatScalarTail(t, p+"One", p+"Store", wd.w[0].AsX(), wd.x[0].AsX())
			return
		}
		step(tail, p+"Store", wd.lanes, vec, true, func() { floatTail(wd, t) })
	})
}

// floatMain is the main step's body: four vectors of t.
func floatMain(wd width, t floatType) {
	floatMacro(mFloatMain, t).use(func() { floatMainBody(wd, t) })
}

func floatMainBody(wd width, t floatType) {
	vec := wd.lanes * t.size
	if t.load == nil {
		for i := range wd.w {
			a.VMOVUPS(m(RSI, i*vec), wd.w[i])
		}
		for i := range wd.w {
			a.VFMADD231PS(m(RDI, i*vec), wd.w[i], wd.acc[i])
		}
		return
	}
	for i := range wd.w {
		t.load(m(RSI, i*vec), wd.w[i])
	}
	for i := range wd.x {
		t.load(m(RDI, i*vec), wd.x[i])
	}
	for i := range wd.w {
		a.VFMADD231PS(wd.x[i], wd.w[i], wd.acc[i])
	}
}

// floatOne is the AVX2 one-vector step's body.
func floatOne(wd width, t floatType) {
	floatMacro(mFloatOne, t).use(func() { floatOneBody(wd, t) })
}

func floatOneBody(wd width, t floatType) {
	fma(t, m(RSI, 0), m(RDI, 0), wd.w[0], wd.x[0], wd.acc[0])
}

// floatTail is the AVX-512 masked tail's body.
func floatTail(wd width, t floatType) {
	floatMacro(mFloatTail, t).use(func() { floatTailBody(wd, t) })
}

func floatTailBody(wd width, t floatType) {
	maskN(wd.lanes)
	w, x := wd.w[0], wd.w[1]
	switch t.name {
	case "f32":
		a.VMOVUPS_Z(m(RSI, 0), K1, w)
		a.VMOVUPS_Z(m(RDI, 0), K1, x)
	case "f16":
		a.VCVTPH2PS_Z(m(RSI, 0), K1, w)
		a.VCVTPH2PS_Z(m(RDI, 0), K1, x)
	case "bf16":
		a.VPMOVZXWD_Z(m(RSI, 0), K1, w)
		a.VPMOVZXWD_Z(m(RDI, 0), K1, x)
		a.VPSLLD(Imm(16), w, w)
		a.VPSLLD(Imm(16), x, x)
	}
	a.VFMADD231PS(x, w, wd.acc[0])
}

// widthOf is the float kernels' width of the package being written.
func widthOf() width {
	if curPkg == "avx2" {
		return avx2Width
	}
	return avx512Width
}

// floatMacros are a body's macros by element type (where the package has
// that kernel).
type floatMacros map[string]twin

func floatMacro(ms floatMacros, t floatType) twin { return ms[t.name] }

// defFloat defines NAME_T (doc) of each element type T of types, in the
// packages whose kernels have it, from body.
func defFloat(name, doc string, pkgs []string, types []floatType, body func(wd width, t floatType)) floatMacros {
	ms := floatMacros{}
	for _, t := range types {
		t := t
		tw := twin{}
		for _, pkg := range pkgs {
			if t.name == "bf16" && pkg == "avx2" {
				continue
			}
			tw[pkg] = defMacro(pkg, header, name+"_"+strings.ToUpper(t.name), fmt.Sprintf(doc, t.name),
				func() { body(widthOf(), t) })
		}
		ms[t.name] = tw
	}
	return ms
}

// The float kernels' macros.
var (
	mFloatArgs = defTwin("FLOAT_ARGS(shift)",
		"loads the arguments: DX dst, R8 rows, R12 the row, R10 x, R13 a row's\n// bytes (k << shift): floatArgs.",
		func() { floatArgsBody(0x77) }, func() []string { return []string{"0x77"} })
	mFloatRowStart = defTwin("FLOAT_ROW_START", "sets SI, DI to the row and x, BX = k, and clears the sums.",
		func() { floatRowStartBody(widthOf()) }, nil)
	mFloatStore = defTwin("FLOAT_STORE", "adds the sums into one float at (DX); next row: floatStore.",
		func() { floatStoreBody(widthOf()) }, nil)
	mFloatRows = defTwin("FLOAT_ROWS(args, row, store, s1, s2, s3)",
		"is a float kernel (floatLoop): args (FLOAT_ARGS), then the row loop, labels\n// row and store, its stages s1-s3.",
		func() {
			placeholder("args")
			floatLoopBody(widthOf(), "", func() {
				placeholder("s1")
				placeholder("s2")
				placeholder("s3")
			})
		}, func() []string { return []string{"args", "Row", "Store", "s1", "s2", "s3"} })
	mFloatStep = defTwin("FLOAT_STEP(label, next, n, bytes, body)",
		"is a stage at label: while BX >= n, body and n values (bytes) on; then next.",
		func() { stepBody("label", "next", 100000, 200000, false, func() { placeholder("body") }) },
		func() []string { return []string{"label", "next", "#100000", "#200000", "body"} })
	mFloatStepMasked = defTwin("FLOAT_STEP_MASKED(label, next, n, bytes, body)",
		"is FLOAT_STEP while BX > 0 (body masks the tail).",
		func() { stepBody("label", "next", 100000, 200000, true, func() { placeholder("body") }) },
		func() []string { return []string{"label", "next", "#100000", "#200000", "body"} })
	mStepRest = defTwin("STEP_REST(label, n, bytes, body)",
		"is a stage after its test: body, SI and DI bytes on, BX n down, back to label.",
		func() { stepRest("label", 100000, 200000, func() { placeholder("body") }) },
		func() []string { return []string{"label", "#100000", "#200000", "body"} })
	mMaskN = def512("MASK_N(lim)", "sets K1 to the low min(BX, lim) bits (clobbers AX, CX): maskN.",
		func() { maskNBody(0x77777777) }, "0x77777777")
	mFloatMain = defFloat("FLOAT_MAIN", "is the main step's body, four vectors of %s.",
		[]string{"avx2", "avx512"}, []floatType{f32, f16, bf16}, floatMainBody)
	mFloatOne = defFloat("FLOAT_ONE", "is the one-vector step's body (%s).",
		[]string{"avx2"}, []floatType{f32, f16}, floatOneBody)
	mFloatTail = defFloat("FLOAT_TAIL", "is the masked tail's body (%s).",
		[]string{"avx512"}, []floatType{f32, f16, bf16}, floatTailBody)
)

// floatScalarTail: one value a step into X4 (AVX2).
func floatScalarTail(t floatType, label, next string, w, x Op) {
	mFloatScalar[t.name].use(func() { floatScalarTailBody(t, label, next, w, x) }, label, next)
}

func floatScalarTailBody(t floatType, label, next string, w, x Op) {
	a.Label(label)
	a.TESTQ(RBX, RBX)
	a.JZ(LabelRef(next))
	if t.load == nil {
		a.VMOVSS(m(RSI, 0), w)
		a.VFMADD231SS(m(RDI, 0), w, X4)
	} else {
		a.MOVWLZX(m(RSI, 0), EAX)
		a.VMOVD(EAX, w)
		a.VCVTPH2PS(w, w)
		a.MOVWLZX(m(RDI, 0), EAX)
		a.VMOVD(EAX, x)
		a.VCVTPH2PS(x, x)
		a.VFMADD231SS(x, w, X4)
	}
	a.ADDQ(imm(t.size), RSI)
	a.ADDQ(imm(t.size), RDI)
	a.DECQ(RBX)
	a.JMP(LabelRef(label))
}

// vdpbf16ps is VDPBF16PS b, a, acc (AVX512_BF16: acc += a.lo·b.lo +
// a.hi·b.hi per float32 lane), which Go's assembler lacks, as the bytes
// GNU as encodes it to, for the register triples used here.
func vdpbf16ps(b, src, acc VecPhysical) {
	enc := map[string][]byte{
		"Z1,Z0,Z8":  {0x62, 0x72, 0x7e, 0x48, 0x52, 0xc1},
		"Z3,Z2,Z9":  {0x62, 0x72, 0x6e, 0x48, 0x52, 0xcb},
		"Z5,Z4,Z10": {0x62, 0x72, 0x5e, 0x48, 0x52, 0xd5},
		"Z7,Z6,Z11": {0x62, 0x72, 0x4e, 0x48, 0x52, 0xdf},
	}
	key := fmt.Sprintf("%s,%s,%s", b.Asm(), src.Asm(), acc.Asm())
	bs, ok := enc[key]
	if !ok {
		panic("vdpbf16ps: no encoding for " + key)
	}
	a.Comment("VDPBF16PS " + key)
	for _, x := range bs {
		a.Instruction(&ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(x)}})
	}
}

// bf16RowsDot: 128 values per step in four VDPBF16PS, then 32 per step
// under a mask. VDPBF16PS flushes bf16 denormals to zero and rounds to
// nearest even regardless of MXCSR.
// The dot kernel's weights and activations, interleaved.
var dotW, dotX = [4]VecPhysical{Z0, Z2, Z4, Z6}, [4]VecPhysical{Z1, Z3, Z5, Z7}

// dotMain is the dot kernel's main step's body: 128 values.
func dotMain() {
	for i := 0; i < 4; i++ {
		a.VMOVDQU16(m(RSI, 64*i), dotW[i])
		a.VMOVDQU16(m(RDI, 64*i), dotX[i])
	}
	for i := 0; i < 4; i++ {
		vdpbf16ps(dotX[i], dotW[i], avx512Width.acc[i])
	}
}

// dotTail is the dot kernel's masked tail's body: up to 32 values.
func dotTail() {
	maskN(32)
	a.VMOVDQU16_Z(m(RSI, 0), K1, Z0)
	a.VMOVDQU16_Z(m(RDI, 0), K1, Z1)
	vdpbf16ps(Z1, Z0, Z8)
}

var (
	mDotMain = def512("DOT_MAIN", "is the bf16 dot kernel's main step's body, 128 values (VDPBF16PS as bytes).", dotMain)
	mDotTail = def512("DOT_TAIL", "is the bf16 dot kernel's masked tail's body, up to 32 values.", dotTail)
	// mFloatScalar are the AVX2 scalar tails (floatScalarTail) by type.
	mFloatScalar = func() map[string]twin {
		ms := map[string]twin{}
		for _, t := range []floatType{f32, f16} {
			t := t
			ms[t.name] = twin{"avx2": defMacro("avx2", header, "FLOAT_SCALAR_"+strings.ToUpper(t.name)+"(label, next)",
				"is the scalar tail at label, one "+t.name+" value a step into X4; then next.",
				func() { floatScalarTailBody(t, "label", "next", X8, X12) }, "label", "next")}
		}
		return ms
	}()
)

func bf16RowsDot() {
	wd := avx512Width
	text("bf16RowsDot", floatSig)
	floatLoop(wd, "dbf16", 1, func() {
		step("dbf16Main", "dbf16Tail", 128, 256, false, func() { mDotMain.use(dotMain) })
		step("dbf16Tail", "dbf16Store", 32, 64, true, func() { mDotTail.use(dotTail) })
	})
}
