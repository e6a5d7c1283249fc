package main

import (
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// a is the context of the file being generated.
var a *build.Context

// m is disp(base).
func m(base Register, disp int) Mem { return Mem{Base: base, Disp: disp} }

// mi is disp(base)(index*1).
func mi(base, index Register, disp int) Mem {
	return Mem{Base: base, Index: index, Scale: 1, Disp: disp}
}

// param is the argument at off(FP).
func param(name string, off int) Mem { return NewParamAddr(name, off) }

// sym is the package symbol ·name+disp(SB). The kernels' constant tables
// are such symbols: Go arrays of each package's tables_amd64.go, read with
// loads that need no alignment.
func sym(name string, disp int) Mem {
	return Mem{Symbol: Symbol{Name: "·" + name}, Base: StaticBase, Disp: disp}
}

// raw emits an instruction avo v0.5.0 does not know (the AVX-512 VNNI
// forms), with the operand order of the Go assembler; the last operand is
// the destination, which these instructions also read.
func raw(op string, ops ...Op) {
	a.Instruction(&ir.Instruction{
		Opcode:   op,
		Operands: ops,
		Inputs:   ops,
		Outputs:  ops[len(ops)-1:],
	})
}

func vpdpwssd(src, b, dst Op) { raw("VPDPWSSD", src, b, dst) }
func vpdpbusd(src, b, dst Op) { raw("VPDPBUSD", src, b, dst) }

// text starts a function with a NOSPLIT frame computed from its Go signature.
func text(name, sig string) { a.Function(name); a.Attributes(attr.NOSPLIT); a.SignatureExpr(sig) }

// reduceTail adds the 256-bit halves Y7 (upper) and Y6 (lower) of a
// float sum, reduces the eight lanes to one float and stores it at dst.
func reduceTail(dst Mem) {
	mReduceTail.use(func() { reduceTailBody(dst) }, dst)
}

func reduceTailBody(dst Mem) {
	a.VADDPS(Y7, Y6, Y6)
	reduce8(Y6, X7, dst)
}

// reduce8 reduces the eight float lanes of lo to one float (scratch hi, an
// XMM register) and stores it at dst.
func reduce8(lo VecPhysical, hi VecPhysical, dst Mem) {
	mReduce8.use(func() { reduce8Body(lo, hi, dst) }, lo, lo.AsX(), hi, dst)
}

func reduce8Body(lo VecPhysical, hi VecPhysical, dst Mem) {
	hsum8(lo, hi)
	a.VMOVSS(lo.AsX(), dst)
}

// hsum8 adds the eight float lanes of lo into its lowest (scratch hi, an
// XMM register).
func hsum8(lo VecPhysical, hi VecPhysical) {
	mHsum8.use(func() { hsum8Body(lo, hi) }, lo, lo.AsX(), hi)
}

func hsum8Body(lo VecPhysical, hi VecPhysical) {
	x := lo.AsX()
	a.VEXTRACTF128(U8(1), lo, hi)
	a.VADDPS(hi, x, x)
	a.VPSHUFD(U8(0x4e), x, hi)
	a.VADDPS(hi, x, x)
	a.VPSHUFD(U8(0xb1), x, hi)
	a.VADDSS(hi, x, x)
}

// rowStore reduces the float sum acc to one float and stores it at (DX),
// then steps DX to the next row: VMOVAPS of the lower half (single-row
// kernels, after a VSUBPS into Z6 where sub is set).
func rowStore(acc, sub VecPhysical) {
	inline := func() { rowStoreBody(acc, sub) }
	if sub != nil {
		mRowStoreSub.use(inline, acc, sub)
	} else {
		mRowStore.use(inline, acc, acc.AsY())
	}
}

func rowStoreBody(acc, sub VecPhysical) {
	if sub != nil {
		a.VSUBPS(sub, acc, Z6)
		a.VEXTRACTF64X4(U8(1), Z6, Y7)
	} else {
		a.VEXTRACTF64X4(U8(1), acc, Y7)
		a.VMOVAPS(acc.AsY(), Y6)
	}
	reduceTail(m(RDX, 0))
	a.ADDQ(Imm(4), RDX)
}

// store4 reduces acc to one float at off(DX) (four-row kernels).
func store4(acc VecPhysical, off int) {
	mStore4.use(func() { store4Body(acc, off) }, acc, off)
}

func store4Body(acc VecPhysical, off int) {
	a.VEXTRACTF64X4(U8(1), acc, Y7)
	a.VEXTRACTF64X4(U8(0), acc, Y6)
	reduceTail(m(RDX, off))
}

// The reductions' macros; a memory operand's sample is a base that no
// kernel uses (R15).
var (
	mHsum8 = defTwin("HSUM8(lo, lox, hi)",
		"adds the eight float lanes of lo (YMM; lox its XMM) into its lowest\n// (scratch hi, an XMM register): hsum8.",
		func() { hsum8Body(Y6, X7) }, func() []string { return []string{"Y6", "X6", "X7"} })
	mReduce8 = defTwin("REDUCE8(lo, lox, hi, dst)",
		"reduces the eight float lanes of lo (YMM; lox its XMM) to one float at dst\n// (scratch hi, an XMM register): reduce8.",
		func() { reduce8Body(Y6, X7, m(R15, 0)) }, func() []string { return []string{"Y6", "X6", "X7", "(R15)"} })
	mReduceTail = def512("REDUCE_TAIL(dst)",
		"adds the halves Y7 (upper) and Y6 (lower) of a float sum and reduces\n// them to one float at dst: reduceTail.",
		func() { reduceTailBody(m(R15, 0)) }, "(R15)")
	mRowStore = def512("ROW_STORE(acc, accy)",
		"reduces the float sum acc (accy its YMM) to one float at (DX) and steps\n// DX to the next row: rowStore.",
		func() { rowStoreBody(Z24, nil) }, "Z24", "Y24")
	mRowStoreSub = def512("ROW_STORE_SUB(acc, sub)",
		"is ROW_STORE of acc - sub (through Z6): rowStore.",
		func() { rowStoreBody(Z24, Z25) }, "Z24", "Z25")
	mStore4 = def512("STORE4(acc, off)",
		"reduces the float sum acc to one float at off(DX) (four-row kernels): store4.",
		func() { store4Body(Z14, 0x7000) }, "Z14", "#28672")
)

// imm is the constant n in the smallest form that integer instructions
// take: an 8-bit one where it fits a signed byte, else 32 bits.
func imm(n int) Constant {
	if n >= -128 && n < 128 {
		return I8(n)
	}
	return I32(n)
}
