package main

// The AVX2 (+FMA, F16C) quantized matvecs of variants/avx2
// (quant_amd64.s), one row at a time on 256-bit vectors (Y0-Y15 only). The
// block arithmetic is the AVX-512 kernels' at half the width: VPMADDUBSW
// of unsigned quants by signed activations into word pairs, VPMADDWD by
// VPSHUFB-broadcast sub-block scales into int32, exact per block, then
// scaled into float32 lanes. The row loop and the Q4_K scale unpacking are
// those of avx512_kquant.go.

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The VPSHUFB tables ·q4kWord, ·q6kWord (word spreads) and ·q4kMinIdx are
// variants/avx2's tables_amd64.go.
func init() { register("avx2", "quant_amd64.s", avx2QuantFile) }

// avx2Args loads the arguments and broadcasts c over the dwords of y.
func avx2Args(c uint32, y VecPhysical) {
	loadArgs(RSI)
	avx2Broadcast(c, y)
}

func avx2Broadcast(c uint32, y VecPhysical) {
	mAVX2Broadcast.use(func() { avx2BroadcastBody(c, y) }, hex32(c), y, y.AsX())
}

func avx2BroadcastBody(c uint32, y VecPhysical) {
	a.MOVL(Imm(uint64(c)), EAX)
	a.VMOVD(EAX, y.AsX())
	a.VPBROADCASTD(y.AsX(), y)
}

// avx2RowStore reduces acc - sub to one float at (DX); next row.
func avx2RowStore(acc, sub VecPhysical) func() {
	return func() { mAVX2RowStore.use(func() { avx2RowStoreBody(acc, sub) }, acc, sub) }
}

func avx2RowStoreBody(acc, sub VecPhysical) {
	a.VSUBPS(sub, acc, Y0)
	reduce8(Y0, X1, m(RDX, 0))
	a.ADDQ(Imm(4), RDX)
}

// avx2Q6kStore is the Q6_K kernel's store: its sum Y13 (no mins sum).
func avx2Q6kStore() { mAVX2Q6kStore.use(avx2Q6kStoreBody) }

func avx2Q6kStoreBody() {
	a.VPXOR(Y12, Y12, Y12)
	avx2RowStore(Y13, Y12)()
}

// The macros of variants/avx2's header.
var (
	mAVX2Broadcast = def2("AVX2_BROADCAST(c, y, x)", "sets every dword of y (x its XMM) to c (through AX).",
		func() { avx2BroadcastBody(0x77777777, Y14) }, "0x77777777", "Y14", "X14")
	mAVX2RowStore = def2("AVX2_ROW_STORE(acc, sub)", "reduces acc - sub to one float at (DX); next row.",
		func() { avx2RowStoreBody(Y14, Y13) }, "Y14", "Y13")
	mAVX2Q6kStore = def2("AVX2_Q6K_STORE", "is AVX2_ROW_STORE of the Q6_K sum Y13.", avx2Q6kStoreBody)
	mAVX2Q4kChunk = def2("AVX2_Q4K_CHUNK(qoff, yoff, s)",
		"is a 32-byte chunk of Q4_K quants at qoff(SI) times the activations at\n"+
			"// yoff(DI), weighted by the scale words s, s+32 of q4kWord: avx2Q4kChunk.",
		func() { avx2Q4kChunkBody(100000, 200000, 300000, 300032) }, "#100000", "#200000", "#300000")
	mAVX2Q4kBlock = def2("AVX2_Q4K_BLOCK", "is a Q4_K super-block at SI into Y13, Y14: avx2Q4kBlock.",
		func() { avx2Q4kBlockBody() })
	mAVX2Q5kBlock = def2("AVX2_Q5K_BLOCK", "is a Q5_K super-block at SI into Y13, Y14: avx2Q5kBlock.",
		func() { avx2KBlockBody(true) })
	mAVX2Q6kFinish = def2("AVX2_Q6K_FINISH(yoff, sidx)",
		"finishes a Q6_K product (Y0, Y1) at yoff(DI), its scale words sidx: avx2Q6kFinish.",
		func() { avx2Q6kFinishBody(100000, 300000) }, "#100000", "#300000")
	mAVX2Q6kHalf = def2("AVX2_Q6K_HALF(ql, qh, yoff)",
		"is half a Q6_K block, ql at ql(SI), qh at qh(SI): avx2Q6kHalf.",
		func() { avx2Q6kHalfBody(100000, 200000, 300000) }, "#100000", "#200000", "#300000")
	mAVX2Q6kBlock = def2("AVX2_Q6K_BLOCK", "is a Q6_K super-block at SI into Y13: avx2Q6kBlock.",
		func() { avx2Q6kBlockBody() })
	mAVX2Q80Block = def2("AVX2_Q80_BLOCK", "is a Q8_0 block at SI into Y13: avx2Q80Block.",
		func() { avx2Q80BlockBody() })
	mAVX2Q40Block = def2("AVX2_Q40_BLOCK", "is a Q4_0 block at SI into Y13: avx2Q40Block.",
		func() { avx2Q40BlockBody() })
	mAVX2Q8Dot = def2("AVX2_Q8_DOT", "adds d_w·d_x·Σw·x of a block (weights in Y0) to Y13: avx2Q8Dot.",
		func() { avx2Q8DotBody() })
)

// def2 defines a macro of variants/avx2's header.
func def2(sig, doc string, body func(), samples ...string) *asmMacro {
	return defMacro("avx2", header, sig, doc, body, samples...)
}

func avx2QuantFile() {
	rowKernel(form{"q4k", false, 0, "q4kRowsAVX2", rowSig, t0, false}, func() { avx2Args(0x0f0f0f0f, Y15) },
		rowLoop{[]VecPhysical{Y14, Y13}, vpxor, avx2Q4kBlock, q4kBytes, q8kBytes, avx2RowStore(Y14, Y13)})

	a.Doc("Q4_K's kernel with the fifth bits (qh) or-ed into the nibbles: avx2Q5kBlock.")
	rowKernel(form{"q5k", false, 0, "q5kRowsAVX2", rowSig, t0, false}, func() { avx2Args(0x0f0f0f0f, Y15) },
		rowLoop{[]VecPhysical{Y14, Y13}, vpxor, avx2Q5kBlock, q5kBytes, q8kBytes, avx2RowStore(Y14, Y13)})

	a.Doc("The quants stay unsigned (0..63); the -32 offset is 32·Σ scale·bsum.")
	rowKernel(form{"q6k", false, 0, "q6kRowsAVX2", rowSig, t0, false}, func() {
		avx2Args(0x0f0f0f0f, Y15)
		avx2Broadcast(0x30303030, Y14)
	}, rowLoop{[]VecPhysical{Y13}, vpxor, avx2Q6kBlock, q6kBytes, q8kBytes, avx2Q6kStore})

	a.Doc("Signed × signed through VPSIGNB: |w| times x·sign(w) (x ≠ -128, as ggml's",
		"quantizer guarantees), VPMADDUBSW, VPMADDWD by ones.")
	rowKernel(form{"q80", false, 0, "q80RowsAVX2", rowSig, t0, false}, func() { avx2Args(0x00010001, Y15) },
		rowLoop{[]VecPhysical{Y13, Y12}, vpxor, avx2Q80Block, 34, 34, avx2RowStore(Y13, Y12)})

	a.Doc("Q8_0's kernel on the nibbles less 8 (values 0-15 from the low nibbles in the",
		"low lane, 16-31 from the high ones in the high lane, as ggml's bytes_from_nibbles_32).")
	rowKernel(form{"q40", false, 0, "q40RowsAVX2", rowSig, t0, false}, func() {
		avx2Args(0x00010001, Y15)
		avx2Broadcast(0x0f0f0f0f, Y11)
		avx2Broadcast(0x08080808, Y10)
	}, rowLoop{[]VecPhysical{Y13, Y12}, vpxor, avx2Q40Block, 18, 34, avx2RowStore(Y13, Y12)})
}

// avx2Q4kChunk: one 32-byte chunk of quants at qoff, low nibbles ×
// y[yoff:], high × y[yoff+32:], weighted by the scale words picked by s0
// and s1, added to Y11.
func avx2Q4kChunk(qoff, yoff, s0, s1 int) {
	if s1 != s0+32 {
		avx2Q4kChunkBody(qoff, yoff, s0, s1)
		return
	}
	mAVX2Q4kChunk.use(func() { avx2Q4kChunkBody(qoff, yoff, s0, s1) }, qoff, yoff, s0)
}

func avx2Q4kChunkBody(qoff, yoff, s0, s1 int) { avx2KChunkBody(qoff, yoff, s0, s1, -1) }

// avx2KChunkBody is avx2Q4kChunkBody; with sub >= 0 (a Q5_K chunk: low
// nibbles sub-block sub, high sub+1) the fifth bits of qh (Y8) are or-ed in
// first: bit b of each byte shifted to bit 4 (a word shift, then the byte
// mask ·q5kBit4 keeps only each byte's own bit).
func avx2KChunkBody(qoff, yoff, s0, s1, sub int) {
	a.VMOVDQU(m(RSI, qoff), Y0)
	a.VPSRLW(Imm(4), Y0, Y1)
	a.VPAND(Y15, Y0, Y0)
	a.VPAND(Y15, Y1, Y1)
	if sub >= 0 {
		for i, q := range []VecPhysical{Y0, Y1} {
			switch b := sub + i; {
			case b < 4:
				a.VPSLLW(Imm(uint64(4-b)), Y8, Y7)
			case b > 4:
				a.VPSRLW(Imm(uint64(b-4)), Y8, Y7)
			default:
				a.VMOVDQA(Y8, Y7)
			}
			a.VPAND(sym("q5kBit4", 0), Y7, Y7)
			a.VPOR(Y7, q, q)
		}
	}
	a.VPMADDUBSW(m(RDI, yoff), Y0, Y0)
	a.VPMADDUBSW(m(RDI, yoff+32), Y1, Y1)
	a.VPSHUFB(sym("q4kWord", s0), Y12, Y2)
	a.VPSHUFB(sym("q4kWord", s1), Y12, Y3)
	a.VPMADDWD(Y2, Y0, Y0)
	a.VPMADDWD(Y3, Y1, Y1)
	a.VPADDD(Y0, Y11, Y11)
	a.VPADDD(Y1, Y11, Y11)
}

func avx2Q4kBlock(form) { mAVX2Q4kBlock.use(avx2Q4kBlockBody) }

func avx2Q4kBlockBody() { avx2KBlockBody(false) }

// avx2Q5kBlock: Q4_K's block of a Q5_K super-block (nibbles at 48, qh at
// 16 held in Y8), each chunk's fifth bits or-ed in (avx2KChunkBody).
func avx2Q5kBlock(form) { mAVX2Q5kBlock.use(func() { avx2KBlockBody(true) }) }

func avx2KBlockBody(q5 bool) {
	q4kScales()
	a.Comment("mins · bsums, scaled by dmin·dx into Y13")
	a.VMOVQ(RBX, X4)
	a.VPBROADCASTQ(X4, Y4)
	a.VPSHUFB(sym("q4kMinIdx", 0), Y4, Y4)
	a.VPMADDWD(m(RDI, 260), Y4, Y4)
	a.VCVTDQ2PS(Y4, Y4)
	q4kFactors(X5, X6, Y10, Y9)
	a.VFMADD231PS(Y9, Y4, Y13)
	a.Comment("the 8 scales as words, in both lanes")
	a.VMOVQ(RAX, X12)
	a.VPMOVZXBW(X12, X12)
	a.VINSERTI128(Imm(1), X12, Y12, Y12)
	a.VPXOR(Y11, Y11, Y11)
	if q5 {
		a.VMOVDQU(m(RSI, 16), Y8)
	}
	for i := 0; i < 4; i++ {
		if q5 {
			avx2KChunkBody(48+32*i, 4+64*i, 64*i, 64*i+32, 2*i)
		} else {
			avx2Q4kChunk(16+32*i, 4+64*i, 64*i, 64*i+32)
		}
	}
	a.VCVTDQ2PS(Y11, Y11)
	a.VFMADD231PS(Y10, Y11, Y14)
}

// avx2Q6kFinish finishes one Q6_K product: Y0 holds the low 4 bits, Y1 the
// high bits already at bits 4-5 (unmasked); times y at yoff, weighted by
// the scale words of Y12 picked by sidx, added to Y11.
func avx2Q6kFinish(yoff, sidx int) {
	mAVX2Q6kFinish.use(func() { avx2Q6kFinishBody(yoff, sidx) }, yoff, sidx)
}

func avx2Q6kFinishBody(yoff, sidx int) {
	a.VPAND(Y14, Y1, Y1)
	a.VPOR(Y1, Y0, Y0)
	a.VPMADDUBSW(m(RDI, yoff), Y0, Y0)
	a.VPSHUFB(sym("q6kWord", sidx), Y12, Y2)
	a.VPMADDWD(Y2, Y0, Y0)
	a.VPADDD(Y0, Y11, Y11)
}

// avx2Q6kHalf: one half block (128 values), ql at qloff (64 bytes), qh at
// qhoff (32).
func avx2Q6kHalf(qloff, qhoff, yoff int) {
	mAVX2Q6kHalf.use(func() { avx2Q6kHalfBody(qloff, qhoff, yoff) }, qloff, qhoff, yoff)
}

func avx2Q6kHalfBody(qloff, qhoff, yoff int) {
	a.VMOVDQU(m(RSI, qloff), Y6)
	a.VMOVDQU(m(RSI, qloff+32), Y7)
	a.VMOVDQU(m(RSI, qhoff), Y8)
	a.VPAND(Y15, Y6, Y0)
	a.VPSLLW(Imm(4), Y8, Y1)
	avx2Q6kFinish(yoff, 0)
	a.VPAND(Y15, Y7, Y0)
	a.VPSLLW(Imm(2), Y8, Y1)
	avx2Q6kFinish(yoff+32, 32)
	a.VPSRLW(Imm(4), Y6, Y0)
	a.VPAND(Y15, Y0, Y0)
	a.VMOVDQA(Y8, Y1)
	avx2Q6kFinish(yoff+64, 64)
	a.VPSRLW(Imm(4), Y7, Y0)
	a.VPAND(Y15, Y0, Y0)
	a.VPSRLW(Imm(2), Y8, Y1)
	avx2Q6kFinish(yoff+96, 96)
}

func avx2Q6kBlock(form) { mAVX2Q6kBlock.use(avx2Q6kBlockBody) }

func avx2Q6kBlockBody() {
	a.VPMOVSXBW(m(RSI, 192), Y9)
	a.VPMADDWD(m(RDI, 260), Y9, Y10)
	a.VPSLLD(Imm(5), Y10, Y10)
	a.VPXOR(Y11, Y11, Y11)
	a.VPSUBD(Y10, Y11, Y11)
	a.VPERMQ(Imm(0x44), Y9, Y12)
	avx2Q6kHalf(0, 128, 4)
	a.VPERMQ(Imm(0xee), Y9, Y12)
	avx2Q6kHalf(64, 160, 132)
	a.MOVWLZX(m(RSI, 208), EAX)
	a.VMOVD(EAX, X5)
	a.VCVTPH2PS(X5, X5)
	a.VMULSS(m(RDI, 0), X5, X5)
	a.VBROADCASTSS(X5, Y5)
	a.VCVTDQ2PS(Y11, Y11)
	a.VFMADD231PS(Y5, Y11, Y13)
}

func avx2Q80Block(form) { mAVX2Q80Block.use(avx2Q80BlockBody) }

func avx2Q80BlockBody() {
	a.VMOVDQU(m(RSI, 2), Y0)
	avx2Q8Dot()
}

func avx2Q40Block(form) { mAVX2Q40Block.use(avx2Q40BlockBody) }

func avx2Q40BlockBody() {
	a.VMOVDQU(m(RSI, 2), X0)
	a.VPSRLW(U8(4), X0, X1)
	a.VINSERTI128(U8(1), X1, Y0, Y0)
	a.VPAND(Y11, Y0, Y0)
	a.VPSUBB(Y10, Y0, Y0)
	avx2Q8Dot()
}

// avx2Q8Dot: Y13 += d_w·d_x · Σ w·x of a block, the 32 signed weights in
// Y0, the Q8_0 activations at DI, d_w at (SI).
func avx2Q8Dot() { mAVX2Q8Dot.use(avx2Q8DotBody) }

func avx2Q8DotBody() {
	a.VMOVDQU(m(RDI, 2), Y1)
	a.VPSIGNB(Y0, Y0, Y2)
	a.VPSIGNB(Y0, Y1, Y1)
	a.VPMADDUBSW(Y1, Y2, Y2)
	a.VPMADDWD(Y15, Y2, Y2)
	a.VCVTDQ2PS(Y2, Y2)
	a.MOVWLZX(m(RSI, 0), EAX)
	a.MOVWLZX(m(RDI, 0), EBX)
	a.SHLL(Imm(16), EBX)
	a.ORL(EBX, EAX)
	a.VMOVD(EAX, X5)
	a.VCVTPH2PS(X5, X5)
	a.VMOVSHDUP(X5, X6)
	a.VMULSS(X6, X5, X5)
	a.VBROADCASTSS(X5, Y5)
	a.VFMADD231PS(Y5, Y2, Y13)
}
