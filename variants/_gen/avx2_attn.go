package main

// Decode attention on AVX2 (variants/avx2/attention_amd64.s): the two
// passes of one KV head's group of four query heads, as variants/avx512's
// attnScores4/attnWeightedSum4 are for 16 lanes, on 8-lane vectors without
// mask registers. The heads' softmax between them is softmaxAVX2
// (ops_amd64.s); the Go side (attention_amd64.go) pads a group to four
// heads with zero queries.
//
// Scores take two cached positions a pass (8 accumulators: each query
// chunk loaded once for both keys), head vectors 8 lanes a step, the
// last step under a VMASKMOVPS lane mask, so any head size works; the four
// heads' sums of a position reduce by VHADDPS into one XMM. Weighted sums
// take 16 output lanes of all four heads a pass over the positions (8
// accumulators; each value line read once), the last pass under masks.

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx2", "attention_amd64.s", func() {
		for _, e := range []cacheElem{elemF32, elemF16, elemBF16} {
			attnScores4AVX2(e)
			attnWsum4AVX2(e)
		}
	})
}

// cacheElem is the type of the cached keys and values: float32, or a
// 16-bit type widened as it is loaded (F16 by VCVTPH2PS, BF16 by a zero
// extension and a shift). The 16-bit forms take head sizes that are a
// multiple of 16 (no lane masks: the Go side widens other sizes first).
type cacheElem struct {
	suffix string
	size   int // bytes
}

var (
	elemF32  = cacheElem{"AVX2", 4}
	elemF16  = cacheElem{"F16AVX2", 2}
	elemBF16 = cacheElem{"BF16AVX2", 2}
)

// load widens 8 cached values at src into dst (Y).
func (e cacheElem) load(src Mem, dst VecPhysical) {
	switch e {
	case elemF16:
		a.VCVTPH2PS(src, dst)
	case elemBF16:
		a.VPMOVZXWD(src, dst)
		a.VPSLLD(U8(16), dst, dst)
	default:
		a.VMOVUPS(src, dst)
	}
}

// attnScores4AVX2: p[j·ldp+t] = scale · q_j·k_t for j < 4, t < n; q_j at
// q + j·headDim floats, k_t at k + t·stride bytes.
//
// Registers: SI q, DX k_t, R8 stride, R9 positions left, R10 headDim,
// R11 ldp·4, R12 3·ldp·4, DI p (stepped a position at a time), R13 the
// byte offset within a head, R14 headDim·4 (q_j at SI + j·R14), BX the
// lanes left in a step; Y0-Y7 the sums (Y0-Y3 position t, Y4-Y7 t+1), Y8
// Y9 the keys, Y10 a query chunk, Y14 scale, Y15 the lane mask.
func attnScores4AVX2(e cacheElem) {
	kt := "*float32"
	if e.size == 2 {
		kt = "*uint16"
	}
	text("attnScores4"+e.suffix, "func(p, q *float32, k "+kt+", stride, headDim, n, ldp int, scale float32)")
	a.MOVQ(param("p", 0), RDI)
	a.MOVQ(param("q", 8), RSI)
	a.MOVQ(param("k", 16), RDX)
	a.MOVQ(param("stride", 24), R8)
	a.MOVQ(param("headDim", 32), R10)
	a.MOVQ(param("n", 40), R9)
	a.MOVQ(param("ldp", 48), R11)
	a.SHLQ(U8(2), R11)
	a.LEAQ(Mem{Base: R11, Index: R11, Scale: 2}, R12)
	a.MOVQ(R10, R14)
	a.SHLQ(U8(2), R14)
	a.VBROADCASTSS(param("scale", 56), Y14)
	// One pass of `pos` positions (2 or 1): the sums over the head, then
	// their reduction and stores.
	pass := func(pos int, label string) {
		for i := 0; i < 4*pos; i++ {
			a.VXORPS(ys[i], ys[i], ys[i])
		}
		a.XORQ(R13, R13)
		a.XORQ(R15, R15)
		a.MOVQ(R10, RBX)
		a.Label(label + "Step")
		if e.size == 4 {
			a.CMPQ(RBX, U8(8))
			a.JL(LabelRef(label + "Tail"))
		}
		scoreStep(e, pos, false)
		a.ADDQ(U8(32), R13)
		a.ADDQ(U8(8*e.size), R15)
		a.SUBQ(U8(8), RBX)
		a.JNZ(LabelRef(label + "Step"))
		if e.size == 4 {
			a.JMP(LabelRef(label + "Sum"))
			a.Label(label + "Tail")
			tailMask(RBX, 8, Y15)
			scoreStep(e, pos, true)
		}
		a.Label(label + "Sum")
		for t := 0; t < pos; t++ {
			b := 4 * t
			a.VHADDPS(ys[b+1], ys[b], ys[b])
			a.VHADDPS(ys[b+3], ys[b+2], ys[b+2])
			a.VHADDPS(ys[b+2], ys[b], ys[b])
			a.VEXTRACTF128(U8(1), ys[b], X10)
			a.VADDPS(X10, ys[b].AsX(), ys[b].AsX())
			a.VMULPS(X14, ys[b].AsX(), ys[b].AsX())
			x := ys[b].AsX()
			a.VMOVSS(x, Mem{Base: RDI, Disp: 4 * t})
			a.VEXTRACTPS(U8(1), x, Mem{Base: RDI, Index: R11, Scale: 1, Disp: 4 * t})
			a.VEXTRACTPS(U8(2), x, Mem{Base: RDI, Index: R11, Scale: 2, Disp: 4 * t})
			a.VEXTRACTPS(U8(3), x, Mem{Base: RDI, Index: R12, Scale: 1, Disp: 4 * t})
		}
		a.ADDQ(U8(4*pos), RDI)
		for t := 0; t < pos; t++ {
			a.ADDQ(R8, RDX)
		}
		a.SUBQ(U8(pos), R9)
	}
	a.Label("scoresPair")
	a.CMPQ(R9, U8(2))
	a.JL(LabelRef("scoresOne"))
	pass(2, "two")
	a.JMP(LabelRef("scoresPair"))
	a.Label("scoresOne")
	a.TESTQ(R9, R9)
	a.JZ(LabelRef("scoresDone"))
	pass(1, "one")
	a.Label("scoresDone")
	a.VZEROUPPER()
	a.RET()
}

// scoreStep is one 8-lane step of the head, the queries at byte offset
// R13 and the keys at R15, for pos positions (k_t at DX, k_{t+1} at
// DX+R8), masked by Y15 where masked (float32 keys only).
func scoreStep(e cacheElem, pos int, masked bool) {
	load := func(src Mem, dst VecPhysical) {
		if masked {
			a.VMASKMOVPS(src, Y15, dst)
		} else {
			a.VMOVUPS(src, dst)
		}
	}
	kload := func(src Mem, dst VecPhysical) {
		if masked {
			load(src, dst)
		} else {
			e.load(src, dst)
		}
	}
	kload(Mem{Base: RDX, Index: R15, Scale: 1}, Y8)
	if pos == 2 {
		a.LEAQ(Mem{Base: RDX, Index: R8, Scale: 1}, RAX)
		kload(Mem{Base: RAX, Index: R15, Scale: 1}, Y9)
	}
	// q_j at SI + j·R14: CX walks the four heads.
	a.LEAQ(Mem{Base: RSI, Index: R13, Scale: 1}, RCX)
	for j := 0; j < 4; j++ {
		load(Mem{Base: RCX}, Y10)
		a.VFMADD231PS(Y10, Y8, ys[j])
		if pos == 2 {
			a.VFMADD231PS(Y10, Y9, ys[4+j])
		}
		if j < 3 {
			a.ADDQ(R14, RCX)
		}
	}
}

// attnWsum4AVX2: out_j = Σ_t p[j·ldp+t]·v_t for j < 4, out_j at out +
// j·headDim floats, v_t at v + t·stride bytes.
//
// Registers: DI out (stepped a pass at a time), SI p_0[t], DX v_t, R8
// stride, R9 positions left, R10 lanes left, R11 ldp·4, R12 3·ldp·4, R13
// headDim·4, BX 3·headDim·4; Y0-Y7 the sums (head j: Y2j lanes 0-7,
// Y2j+1 lanes 8-15), Y8 Y9 the values, Y10 a probability, Y14 Y15 the
// masks of the last pass.
func attnWsum4AVX2(e cacheElem) {
	vt := "*float32"
	if e.size == 2 {
		vt = "*uint16"
	}
	text("attnWsum4"+e.suffix, "func(out, p *float32, v "+vt+", stride, headDim, n, ldp int)")
	a.MOVQ(param("out", 0), RDI)
	a.MOVQ(param("stride", 24), R8)
	a.MOVQ(param("headDim", 32), R10)
	a.MOVQ(param("ldp", 48), R11)
	a.SHLQ(U8(2), R11)
	a.LEAQ(Mem{Base: R11, Index: R11, Scale: 2}, R12)
	a.MOVQ(R10, R13)
	a.SHLQ(U8(2), R13)
	a.LEAQ(Mem{Base: R13, Index: R13, Scale: 2}, RBX)
	// the value pointer of pass 0; each pass starts 64 bytes further on
	a.MOVQ(param("v", 16), R15)
	pass := func(label string, masked bool) {
		for i := 0; i < 8; i++ {
			a.VXORPS(ys[i], ys[i], ys[i])
		}
		a.MOVQ(param("p", 8), RSI)
		a.MOVQ(R15, RDX)
		a.MOVQ(param("n", 40), R9)
		a.Label(label)
		if masked {
			a.VMASKMOVPS(Mem{Base: RDX}, Y14, Y8)
			a.VMASKMOVPS(Mem{Base: RDX, Disp: 32}, Y15, Y9)
		} else {
			e.load(Mem{Base: RDX}, Y8)
			e.load(Mem{Base: RDX, Disp: 8 * e.size}, Y9)
		}
		for j, p := range []Mem{{Base: RSI}, {Base: RSI, Index: R11, Scale: 1}, {Base: RSI, Index: R11, Scale: 2}, {Base: RSI, Index: R12, Scale: 1}} {
			a.VBROADCASTSS(p, Y10)
			a.VFMADD231PS(Y10, Y8, ys[2*j])
			a.VFMADD231PS(Y10, Y9, ys[2*j+1])
		}
		a.ADDQ(U8(4), RSI)
		a.ADDQ(R8, RDX)
		a.DECQ(R9)
		a.JNZ(LabelRef(label))
		for j, o := range []Mem{{Base: RDI}, {Base: RDI, Index: R13, Scale: 1}, {Base: RDI, Index: R13, Scale: 2}, {Base: RDI, Index: RBX, Scale: 1}} {
			if masked {
				a.VMASKMOVPS(ys[2*j], Y14, o)
				a.VMASKMOVPS(ys[2*j+1], Y15, o.Offset(32))
			} else {
				a.VMOVUPS(ys[2*j], o)
				a.VMOVUPS(ys[2*j+1], o.Offset(32))
			}
		}
	}
	a.Label("wsumPass")
	if e.size == 4 {
		a.CMPQ(R10, U8(16))
		a.JL(LabelRef("wsumLast"))
	}
	pass("wsumPos", false)
	a.ADDQ(U8(64), RDI)
	a.ADDQ(U8(16*e.size), R15)
	a.SUBQ(U8(16), R10)
	a.JNZ(LabelRef("wsumPass"))
	if e.size == 2 {
		a.VZEROUPPER()
		a.RET()
		return
	}
	a.JMP(LabelRef("wsumDone"))
	a.Label("wsumLast")
	// masks of lanes 0-7 and 8-15 of the last R10 (1-15) lanes
	tailMask(R10, 8, Y14)
	a.MOVQ(R10, RAX)
	a.SUBQ(U8(8), RAX)
	a.MOVQ(U32(0), RCX)
	a.CMOVQLT(RCX, RAX)
	a.MOVQ(RAX, RCX)
	tailMask(RCX, 8, Y15)
	pass("wsumTailPos", true)
	a.Label("wsumDone")
	a.VZEROUPPER()
	a.RET()
}
