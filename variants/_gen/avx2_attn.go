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
		attnScores4AVX2()
		attnWsum4AVX2()
	})
}

// attnScores4AVX2: p[j·ldp+t] = scale · q_j·k_t for j < 4, t < n; q_j at
// q + j·headDim floats, k_t at k + t·stride bytes.
//
// Registers: SI q, DX k_t, R8 stride, R9 positions left, R10 headDim,
// R11 ldp·4, R12 3·ldp·4, DI p (stepped a position at a time), R13 the
// byte offset within a head, R14 headDim·4 (q_j at SI + j·R14), BX the
// lanes left in a step; Y0-Y7 the sums (Y0-Y3 position t, Y4-Y7 t+1), Y8
// Y9 the keys, Y10 a query chunk, Y14 scale, Y15 the lane mask.
func attnScores4AVX2() {
	text("attnScores4AVX2", "func(p, q, k *float32, stride, headDim, n, ldp int, scale float32)")
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
		a.MOVQ(R10, RBX)
		a.Label(label + "Step")
		a.CMPQ(RBX, U8(8))
		a.JL(LabelRef(label + "Tail"))
		scoreStep(pos, false)
		a.ADDQ(U8(32), R13)
		a.SUBQ(U8(8), RBX)
		a.JNZ(LabelRef(label + "Step"))
		a.JMP(LabelRef(label + "Sum"))
		a.Label(label + "Tail")
		tailMask(RBX, 8, Y15)
		scoreStep(pos, true)
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

// scoreStep is one 8-lane step of the head at byte offset R13 for pos
// positions (k_t at DX, k_{t+1} at DX+R8), masked by Y15 where masked.
func scoreStep(pos int, masked bool) {
	load := func(src Mem, dst VecPhysical) {
		if masked {
			a.VMASKMOVPS(src, Y15, dst)
		} else {
			a.VMOVUPS(src, dst)
		}
	}
	load(Mem{Base: RDX, Index: R13, Scale: 1}, Y8)
	if pos == 2 {
		a.LEAQ(Mem{Base: RDX, Index: R8, Scale: 1}, RAX)
		load(Mem{Base: RAX, Index: R13, Scale: 1}, Y9)
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
func attnWsum4AVX2() {
	text("attnWsum4AVX2", "func(out, p, v *float32, stride, headDim, n, ldp int)")
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
			a.VMOVUPS(Mem{Base: RDX}, Y8)
			a.VMOVUPS(Mem{Base: RDX, Disp: 32}, Y9)
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
	a.CMPQ(R10, U8(16))
	a.JL(LabelRef("wsumLast"))
	pass("wsumPos", false)
	a.ADDQ(U8(64), RDI)
	a.ADDQ(U8(64), R15)
	a.SUBQ(U8(16), R10)
	a.JNZ(LabelRef("wsumPass"))
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
