package main

// The Q8_0 and Q4_0 GEMM on AVX2 (variants/avx2/gemm80_amd64.s,
// matmul/q8_0 and matmul/q4_0: avx2-gemm): variants/avx512's
// avx512-vnni-gemm on 8-lane vectors without VNNI. A panel holds 8 rows,
// one a dword lane, as k-quads (Q8_0: the signed quants; Q4_0: the nibbles
// q, 0..15) and their d_w as float32; an activation block holds 4 tokens'
// Q8_0 quants, their offset term (Q4_0: −8·Σx; Q8_0: 0) and d_x. Per
// 32-value block and token the products go through VPMADDUBSW (unsigned ×
// signed byte pairs into words) and VPMADDWD by ones:
//
//   - Q8_0: |w| × x·sign(w) (VPSIGNB), as ggml's AVX2 dot does, so a pair
//     stays below 2^15 (2·128·127); words to dwords at every k-quad.
//   - Q4_0: q × x, 2·15·127 a pair, so the 8 k-quads of a block add in
//     words (30480 at most) and go to dwords once a block.
//
// Then d_w·d_x·float(sum) into the token's float lanes.

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	register("avx2", "gemm80_amd64.s", func() {
		gemm80AVX2("gemmQ80AVX2", false)
		gemm80AVX2("gemmQ40AVX2", true)
	})
}

// Layout constants, shared with gemm80_amd64.go.
const (
	g2Panel = 288 // per block: 8 k-quads × 8 rows × 4 bytes, then 8 float32 d_w
	g2Act   = 160 // per block: 4 tokens × 32 quants, 4 int32 offsets, 4 float32 d_x
)

// gemm80AVX2 writes func(a *gemm2Args): gemm2Args is {panel, x *byte; dst
// *float32; lddBytes, nb, ntok, nrows int}, one panel against one block of
// up to 4 tokens over all nb blocks.
//
// Registers: SI the panel, DI the activations, CX blocks left, DX dst,
// R10 lddBytes, R11 ntok, R12 nrows; Y0-Y3 the tokens' int32 sums, Y4-Y7
// their float sums, Y8 the k-quad, Y9 its magnitudes (Q8_0) or bytes
// (Q4_0), Y10 a token's activations, Y11-Y14 the Q4_0 word sums, Y15 the
// words 1.
func gemm80AVX2(name string, q40 bool) {
	text(name, "func(a *byte)") // a *gemm2Args on the Go side
	a.MOVQ(param("a", 0), RAX)
	a.MOVQ(m(RAX, 0), RSI)
	a.MOVQ(m(RAX, 8), RDI)
	a.MOVQ(m(RAX, 16), RDX)
	a.MOVQ(m(RAX, 24), R10)
	a.MOVQ(m(RAX, 32), RCX)
	a.MOVQ(m(RAX, 40), R11)
	a.MOVQ(m(RAX, 48), R12)
	a.MOVL(U32(0x00010001), EAX)
	a.VMOVD(EAX, X15)
	a.VPBROADCASTD(X15, Y15)
	for t := 4; t < 8; t++ {
		a.VXORPS(ys[t], ys[t], ys[t])
	}
	a.Label("block")
	for t := 0; t < 4; t++ {
		if q40 {
			a.VPBROADCASTD(m(RDI, 128+4*t), ys[t])
			a.VPXOR(ys[11+t], ys[11+t], ys[11+t])
		} else {
			a.VPXOR(ys[t], ys[t], ys[t])
		}
	}
	for kq := 0; kq < 8; kq++ {
		if q40 {
			a.VMOVDQU(m(RSI, 32*kq), Y9)
		} else {
			a.VMOVDQU(m(RSI, 32*kq), Y8)
			a.VPSIGNB(Y8, Y8, Y9)
		}
		for t := 0; t < 4; t++ {
			a.VPBROADCASTD(m(RDI, 32*t+4*kq), Y10)
			if !q40 {
				a.VPSIGNB(Y8, Y10, Y10)
			}
			a.VPMADDUBSW(Y10, Y9, Y10)
			if q40 {
				a.VPADDW(Y10, ys[11+t], ys[11+t])
				continue
			}
			a.VPMADDWD(Y15, Y10, Y10)
			a.VPADDD(Y10, ys[t], ys[t])
		}
	}
	a.VMOVUPS(m(RSI, 256), Y8)
	for t := 0; t < 4; t++ {
		if q40 {
			a.VPMADDWD(Y15, ys[11+t], ys[11+t])
			a.VPADDD(ys[11+t], ys[t], ys[t])
		}
		a.VCVTDQ2PS(ys[t], ys[t])
		a.VBROADCASTSS(m(RDI, 144+4*t), Y10)
		a.VMULPS(Y8, Y10, Y10)
		a.VFMADD231PS(Y10, ys[t], ys[4+t])
	}
	a.ADDQ(U32(g2Panel), RSI)
	a.ADDQ(U32(g2Act), RDI)
	a.DECQ(RCX)
	a.JNZ(LabelRef("block"))
	// The rows: all 8 by plain stores, fewer under a lane mask.
	tailMask(R12, 8, Y14)
	for t := 0; t < 4; t++ {
		a.CMPQ(R11, U8(t+1))
		a.JB(LabelRef("done"))
		a.CMPQ(R12, U8(8))
		a.JB(LabelRef("masked" + string(rune('0'+t))))
		a.VMOVUPS(ys[4+t], m(RDX, 0))
		a.JMP(LabelRef("next" + string(rune('0'+t))))
		a.Label("masked" + string(rune('0'+t)))
		a.VMASKMOVPS(ys[4+t], Y14, m(RDX, 0))
		a.Label("next" + string(rune('0'+t)))
		a.ADDQ(R10, RDX)
	}
	a.Label("done")
	a.VZEROUPPER()
	a.RET()
}
