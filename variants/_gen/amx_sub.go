package main

// variants/amx/sub_amd64.s: the sub-block-sum VNNI GEMM of Q4_K and Q6_K
// weights (avx512-vnni-sub, issue 19 item 5) and its panel packers. One
// description for both formats: they differ in the sub-block size (8 or 4
// k-quads), the number of scales and how the block sums come in.

import (
	"fmt"
	"strings"
)

func init() {
	registerText("amx", "sub_amd64.s", amxSub)
	registerText("amx", "sub_amd64.h", amxSubHeader)
}

// Layout constants, mirrored from variants/amx/sub.go (a test there checks
// the generated file against them through the kernels' results).
const (
	subTok      = 12
	subScales   = 4096
	subQ4Coef   = subScales + 8*64
	subQ4D      = subQ4Coef + 4*64
	subQ4Dmin   = subQ4D + 64
	subQ4Bytes  = subQ4Dmin + 64
	subQ6Coef   = subScales + 16*64
	subQ6D      = subQ6Coef + 8*64
	subQ6Bytes  = subQ6D + 64
	subActD     = 4 * subTok * 64
	subActBsums = subActD + 4*subTok
	subActBytes = (subActBsums + 32*subTok + 63) &^ 63
)

func amxSub() []byte {
	var l lines
	l.asmHead("amx_sub.go")
	l.e("#include \"../avx512/lanes_amd64.h\"")
	l.e("#include \"sub_amd64.h\"")
	l.e("")
	subPackQ4K(&l)
	l.e("")
	subPackQ6K(&l)
	l.e("")
	subPackQ5K(&l)
	l.e("")
	subPackPf(&l, false)
	l.e("")
	subPackPf(&l, true)
	l.e("")
	subKernel(&l, false)
	l.e("")
	subKernel(&l, true)
	l.e("")
	subKernelW(&l, false)
	l.e("")
	subKernelW(&l, true)
	return []byte(strings.Join(l, "\n") + "\n")
}

// amxSubHeader writes variants/amx/sub_amd64.h: the super-block steps that
// sub_amd64.s runs in more than one function (each packer with and without
// prefetches, each kernel in both loop orders), written once as macros.
func amxSubHeader() []byte {
	return macroHeader("amx_sub.go", []string{
		"// The super-block steps that the functions of sub_amd64.s share,",
		"// written once as macros.",
	}, append([]macro{
		{"SUB_PACK_Q4K_STEP", "is one super-block of subPackQ4K (subPackQ4KStep).", subPackQ4KStep},
		{"SUB_SCALE_BYTES4(shr, src, off)", "stores four scale bytes as dwords (subScaleBytes4).", subScaleBytes4},
		{"SUB_SCALE_BYTE(shr, shift, src, off)", "stores one scale byte as dwords (subScaleByte).", subScaleByte},
		{"SUB_Q4K_CHUNK(c)", "is chunk c of a Q4_K super-block's quants (subQ4KChunk).", subQ4KChunk},
		{"SUB_Q4K_QUAD(src, lo)", "is one Q4_K quant dword as two k-quads (subQ4KQuad).", subQ4KQuad},
		{"SUB_PACK_Q6K_STEP", "is one super-block of subPackQ6K (subPackQ6KStep).", subPackQ6KStep},
		{"SUB_PACK_Q5K_STEP", "is one super-block of subPackQ5K (subPackQ5KStep).", subPackQ5KStep},
		{"SUB_Q5K_CHUNK(c, rlo, rhi)", "is chunk c of a Q5_K super-block's quants (subQ5KChunk).", subQ5KChunk},
		{"SUB_Q5K_QUAD(src, qh, lo, rlo, rhi)", "is one Q5_K quant dword as two k-quads (subQ5KQuad).", subQ5KQuad},
		{"SUB_Q6K_COEF(sel, sc, off)", "is a pair of Q6_K block-sum coefficients (subQ6KCoef).", subQ6KCoef},
		{"SUB_Q6K_HALF(n)", "is half n of a Q6_K super-block's quants (subQ6KHalf).", subQ6KHalf},
		{"SUB_Q6K_QUAD(n, kq)", "is one Q6_K k-quad (subQ6KQuad).", subQ6KQuad},
		{"SUB_PACKER(load, pf, step, src, dst)", "is a packer's body (subPackerBody).", subPackerBody},
		{subNone, "is nothing: the load and prefetch of the packers without prefetches.", func(*lines) {}},
		{"SUB_NEXT_TILE", "loads R10 with packArgs.next, the next tile to prefetch.", func(l *lines) { l.e("\tMOVQ 112(AX), R10") }},
		subPrefetch(16 * 144),
		subPrefetch(16 * 210),
		{"SUB_PREFETCH_1K(off)", "prefetches the 16 cache lines of 1 KiB at off(R10) (subPrefetch1K).", subPrefetch1K},
		subSubBlock(8),
		subSubBlock(4),
		{"SUB_QUADS4(q0)", "adds k-quads q0 to q0+3 of the chunk into Z0-Z11 (subQuads4).", subQuads4},
		{"SUB_QUAD(qi)", "adds k-quad qi of the chunk into Z0-Z11 (subQuad).", subQuad},
		{"SUB_DOT4(qi, row, z0, z1, z2, z3)", "adds k-quad qi times four tokens' activations (subDot4).", subDot4},
		{"SUB_SCALE(s)", "scales the sums of sub-block s into Z12-Z23 (subScale).", subScale},
		{"SUB_SCALE4(s0, s1, s2, s3, a0, a1, a2, a3)", "scales four tokens' sums (subScale4).", subScale4},
		{"SUB_SCALE_TOKEN(sum, acc)", "scales one token's sub-block sum into acc (subScaleToken).", subScaleToken},
		{"SUB_STORE", "stores CX rows of acc at SI to dst at BX (subStore).", subStore},
		{"SUB_ZERO_REGS", "zeroes Z0-Z23 (subZeroRegs).", subZeroRegs},
		{"SUB_ZERO_ACC", "stores Z0 (zero) in the 12 rows of acc at R11 (subZeroAcc).", subZeroAcc},
		{"SUB_CHUNK_Q4K", "is one chunk of a Q4_K super-block of subKernelQ4K(W) (subChunk).", func(l *lines) { subChunk(l, false) }},
		{"SUB_CHUNK_Q6K", "is one chunk of a Q6_K super-block of subKernelQ6K(W) (subChunk).", func(l *lines) { subChunk(l, true) }},
		{"SUB_EPILOGUE_Q4K(act)", "is the block-sum epilogue of a Q4_K super-block into acc at R11,\n// act the activation super-block (subEpilogue).", func(l *lines) { subEpilogue(l, false, "act") }},
		{"SUB_EPILOGUE_Q6K(act)", "is the block-sum epilogue of a Q6_K super-block into acc at R11,\n// act the activation super-block (subEpilogue).", func(l *lines) { subEpilogue(l, true, "act") }},
		{"SUB_KERNEL(step, epilogue, wbytes)", "is the body of subKernelQ4K and subKernelQ6K (subKernelBody).", subKernelBody},
		{"SUB_KERNEL_W(step, epilogue, wbytes)", "is the body of subKernelQ4KW and subKernelQ6KW (subKernelWBody).", subKernelWBody},
	}, subEpilogueMacros...))
}

func subPackQ4K(l *lines) {
	l.doc(subPackQ4KDoc)
	subPackLoop(l, "subPackQ4K", subNone, "SUB_PACK_Q4K_STEP", 144, subQ4Bytes)
}

const subPackQ4KDoc = `
// func subPackQ4K(a *packArgs)
//
// Unpacks rows (mask) of a 16-row tile, nsb Q4_K super-blocks, into the
// sub-block-sum panel of sub.go: the raw nibbles as k-quads (one row per
// dword lane, gathered as packQ4KTiles does), the eight scales as dwords,
// the min pairs (m_2h, m_2h+1) as word pairs, d and dmin. Constants as
// packQ4KTiles's (Z30 0x3f, Z29 0x0f, Z28 0x30, min selectors at DX+896).
`

func subPackQ5K(l *lines) {
	l.doc(subPackQ5KDoc)
	subPackLoop(l, "subPackQ5K", subNone, "SUB_PACK_Q5K_STEP", 176, subQ4Bytes)
}

const subPackQ5KDoc = `
// func subPackQ5K(a *packArgs)
//
// subPackQ4K for Q5_K: the same header (d, dmin, the 6-bit scales and
// mins) and panel, the quants 0..31: each nibble of qs joined with its
// fifth bit from qh (bit 2c of qh[l] for the low nibbles of chunk c, bit
// 2c+1 for the high ones), shifted to bit 4 and merged under Z12 (0x10 a
// byte). The eight qh dwords of the 16 rows are gathered once a
// super-block into Z0-Z7 and serve all four chunks.
`

// subPackQ5KStep is one super-block of subPackQ5K (SUB_PACK_Q5K_STEP): the
// Q4_K header steps, qh into Z0-Z7, then its four chunks (SUB_Q5K_CHUNK).
func subPackQ5KStep(l *lines) {
	l.q4kScalesMins(subQ4D, subQ4Dmin, subQ4Coef)
	l.e("\tSUB_SCALE_BYTES4(VPSRLD, Z4, %d)", subScales)     // sc0-3
	l.e("\tSUB_SCALE_BYTES4(VPSRLD, Z6, %d)", subScales+256) // sc4-7
	for kq := 0; kq < 8; kq++ {
		l.gather(16+4*kq, kq)
	}
	l.e("\tMOVL $0x10101010, R9")
	l.e("\tVPBROADCASTD R9, Z12")
	for c := 0; c < 4; c++ {
		rlo, rhi := q5kRotations(c)
		l.e("\tSUB_Q5K_CHUNK(%d, %d, %d)", c, rlo, rhi)
	}
}

// subQ5KChunk is SUB_Q5K_CHUNK(c, rlo, rhi): chunk c's eight quant dwords
// of the 16 rows as k-quads (SUB_Q5K_QUAD), the fifth bits from Z0-Z7.
func subQ5KChunk(l *lines) {
	for kq := 0; kq < 8; kq++ {
		l.e("\tSUB_Q5K_QUAD((48+32*c+%d), Z%d, (1024*c+%d), rlo, rhi)", 4*kq, kq, 64*kq)
	}
}

// subQ5KQuad is SUB_Q5K_QUAD(src, qh, lo, rlo, rhi): the quant dword at src
// of the 16 rows, its low nibbles joined with their fifth bits as the
// k-quad at lo(DI), its high ones 512 further. qh holds the qh dword of
// that k-quad; rotating it left by rlo (rhi) brings bit 2c (2c+1) of each
// byte to bit 4 of the same byte (a rotate by −3…4 mod 32 keeps that bit
// within its byte) and Z12 (0x10 a byte) keeps only it.
func subQ5KQuad(l *lines) {
	l.e("\tGATHER(src, Z16)")
	l.e("\tVPANDD Z29, Z16, Z8")
	l.e("\tVPROLD $rlo, qh, Z10")
	l.e("\tVPTERNLOGD $0xF8, Z12, Z10, Z8")
	l.e("\tVMOVDQU32 Z8, lo(DI)")
	l.e("\tVPSRLD $4, Z16, Z9")
	l.e("\tVPANDD Z29, Z9, Z9")
	l.e("\tVPROLD $rhi, qh, Z11")
	l.e("\tVPTERNLOGD $0xF8, Z12, Z11, Z9")
	l.e("\tVMOVDQU32 Z9, (lo+512)(DI)")
}

// q5kRotations are the left rotations that bring the fifth bits of chunk
// c's low (bit 2c) and high (bit 2c+1) nibbles to bit 4.
func q5kRotations(c int) (int, int) { return (4 - 2*c) & 31, (3 - 2*c) & 31 }

// subPackLoop writes the sub-block-sum packer name: SUB_PACKER over the
// super-blocks with step (the format's SUB_PACK_*_STEP), reading srcBytes
// of weights and writing dstBytes of panel a step, and pf the prefetches of
// each step (subNone: none; else R10 is loaded with packArgs.next for them,
// SUB_NEXT_TILE).
func subPackLoop(l *lines, name, pf, step string, srcBytes, dstBytes int) {
	load := "SUB_NEXT_TILE"
	if pf == subNone {
		load = subNone
	}
	l.e("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	l.e("\tSUB_PACKER(%s, %s, %s, %d, %d)", load, pf, step, srcBytes, dstBytes)
}

// subNone is the empty macro: the load and prefetch of the packers without
// prefetches.
const subNone = "SUB_NONE"

// subPackerBody is SUB_PACKER(load, pf, step, src, dst): a packer's
// arguments and constants (PACK_ARGS, PACK_CONSTANTS), load, then its loop
// over the CX super-blocks. Its label is function-scoped: one use per TEXT.
func subPackerBody(l *lines) {
	l.e("\tPACK_ARGS")
	l.constants()
	l.e("\tload")
	l.e("sb:")
	l.e("\tpf")
	l.e("\tstep")
	l.e("\tADDQ $src, SI")
	l.e("\tADDQ $dst, DI")
	l.e("\tDECQ CX")
	l.e("\tJNZ sb")
	l.e("\tVZEROUPPER")
	l.e("\tRET")
}

// subPackQ4KStep is one super-block of subPackQ4K (SUB_PACK_Q4K_STEP):
// its scales, mins, d and dmin, then its four chunks (SUB_Q4K_CHUNK).
func subPackQ4KStep(l *lines) {
	l.q4kScalesMins(subQ4D, subQ4Dmin, subQ4Coef)
	l.e("\tSUB_SCALE_BYTES4(VPSRLD, Z4, %d)", subScales)     // sc0-3
	l.e("\tSUB_SCALE_BYTES4(VPSRLD, Z6, %d)", subScales+256) // sc4-7
	for c := 0; c < 4; c++ {
		l.e("\tSUB_Q4K_CHUNK(%d)", c)
	}
}

// subScaleBytes4 is SUB_SCALE_BYTES4(shr, src, off): the four scale bytes
// of src (low byte first) as dwords at off(DI), 64 bytes apart, extended by
// shr (VPSRLD: zero, VPSRAD: sign) through SUB_SCALE_BYTE.
func subScaleBytes4(l *lines) {
	for i := 0; i < 4; i++ {
		l.e("\tSUB_SCALE_BYTE(shr, %d, src, (off+%d))", 24-8*i, 64*i)
	}
}

// subScaleByte is SUB_SCALE_BYTE(shr, shift, src, off): the byte of src
// that shift leaves at the top, extended by shr, as dwords at off(DI).
func subScaleByte(l *lines) {
	l.e("\tVPSLLD $shift, src, Z11")
	l.e("\tshr $24, Z11, Z11")
	l.e("\tVMOVDQU32 Z11, off(DI)")
}

// subQ4KChunk is SUB_Q4K_CHUNK(c): chunk c's eight quant dwords of the 16
// rows as k-quads (SUB_Q4K_QUAD).
func subQ4KChunk(l *lines) {
	for kq := 0; kq < 8; kq++ {
		l.e("\tSUB_Q4K_QUAD((16+32*c+%d), (1024*c+%d))", 4*kq, 64*kq)
	}
}

// subQ4KQuad is SUB_Q4K_QUAD(src, lo): the quant dword at src of the 16
// rows, its low nibbles as the k-quad at lo(DI), its high ones 512 further.
func subQ4KQuad(l *lines) {
	l.e("\tGATHER(src, Z16)")
	l.e("\tVPANDD Z29, Z16, Z8")
	l.e("\tVMOVDQU32 Z8, lo(DI)")
	l.e("\tVPSRLD $4, Z16, Z9")
	l.e("\tVPANDD Z29, Z9, Z9")
	l.e("\tVMOVDQU32 Z9, (lo+512)(DI)")
}

func subPackQ6K(l *lines) {
	l.doc(subPackQ6KDoc)
	subPackLoop(l, "subPackQ6K", subNone, "SUB_PACK_Q6K_STEP", 210, subQ6Bytes)
}

const subPackQ6KDoc = `
// func subPackQ6K(a *packArgs)
//
// subPackQ4K for Q6_K: the 6-bit quants (0..63, the −32 left to the block
// sums) as k-quads, built from ql and qh as packQ6KTiles does; the sixteen
// int8 scales sign-extended to dwords; the block-sum coefficients
// −32·sc as word pairs; d. Constants as packQ6KTiles's (Z29 0x0f, Z28
// 0x30, the high-byte selectors at DX+896).
`

// subPackQ6KStep is one super-block of subPackQ6K (SUB_PACK_Q6K_STEP):
// d, the sixteen scales, the block-sum coefficients (SUB_Q6K_COEF), then its
// two halves (SUB_Q6K_HALF).
func subPackQ6KStep(l *lines) {
	l.e("\tQ6K_SCALES_D")
	l.e("\tVMOVUPS Z9, %d(DI)        // d", subQ6D)
	for k := 0; k < 4; k++ {
		l.e("\tSUB_SCALE_BYTES4(VPSRAD, Z%d, %d)", 4+k, subScales+256*k)
	}
	l.e("\tVPXORD Z12, Z12, Z12")
	for h := 0; h < 8; h++ { // −32·sc2h, −32·sc2h+1
		l.e("\tSUB_Q6K_COEF(%d, Z%d, %d)", 896+64*(h%2), 4+h/2, subQ6Coef+64*h)
	}
	for n := 0; n < 2; n++ {
		l.e("\tSUB_Q6K_HALF(%d)", n)
	}
}

// subQ6KCoef is SUB_Q6K_COEF(sel, sc, off): the block-sum coefficients
// −32·sc of the scale byte pair that sel(DX) picks from sc, as words at
// off(DI) (Z12 zero).
func subQ6KCoef(l *lines) {
	l.e("\tVPSHUFB sel(DX), sc, Z11")
	l.e("\tVPSRAW $3, Z11, Z11")
	l.e("\tVPSUBW Z11, Z12, Z11")
	l.e("\tVMOVDQU32 Z11, off(DI)")
}

// subQ6KHalf is SUB_Q6K_HALF(n): half n's eight k-quads (SUB_Q6K_QUAD).
func subQ6KHalf(l *lines) {
	for kq := 0; kq < 8; kq++ {
		l.e("\tSUB_Q6K_QUAD(n, %d)", kq)
	}
}

// subQ6KQuad is SUB_Q6K_QUAD(n, kq): k-quad kq of half n, built from the
// dwords of ql (two) and qh (one) of the 16 rows, one quarter
// (Q6K_QUARTERq) at a time into its panel row.
func subQ6KQuad(l *lines) {
	l.e("\tGATHER((64*n+4*kq), Z8)")
	l.e("\tGATHER((64*n+32+4*kq), Z9)")
	l.e("\tGATHER((128+32*n+4*kq), Z10)")
	for q := 0; q < 4; q++ {
		l.e("\tQ6K_QUARTER%d", q)
		l.e("\tVMOVDQU32 Z11, (2048*n+%d+64*kq)(DI)", 512*q)
	}
}

// subPackPf writes subPackQ4KPf or (q6) subPackQ6KPf: the packer with, in
// each super-block step, a PREFETCHT0 of every line of the next tile's
// share of that step (16 rows of a super-block's bytes: its rows are one
// contiguous run of 16 rows, read here a sixteenth per step, so the next
// tile arrives over this one's steps). The 16 row streams a tile gathers
// from at once defeat the hardware prefetchers: cold, the packer ran at
// 3.2 GB/s of weights on one Zen 5 thread against 17.8 GB/s on weights in
// cache. next (packArgs at 112) nil: no prefetches.
func subPackPf(l *lines, q6 bool) {
	name, blk, step, dst := "subPackQ4KPf", 144, "SUB_PACK_Q4K_STEP", subQ4Bytes
	if q6 {
		name, blk, step, dst = "subPackQ6KPf", 210, "SUB_PACK_Q6K_STEP", subQ6Bytes
	}
	l.doc(fmt.Sprintf(`
// func %s(a *packArgs)
//
// %s with the next tile's weights prefetched (R10: packArgs.next, then
// %d bytes further each super-block; nil: none).
`, name, name[:len(name)-2], 16*blk))
	subPackLoop(l, name, fmt.Sprintf("SUB_PREFETCH_%d", 16*blk), step, blk, dst)
}

// subPrefetch is the SUB_PREFETCH_n macro of subPackPf: unless R10 is nil,
// a PREFETCHT0 of each of the n bytes' lines at R10 (SUB_PREFETCH_1K a KiB
// at a time), then R10 advanced n bytes. Its label is function-scoped.
func subPrefetch(n int) macro {
	return macro{fmt.Sprintf("SUB_PREFETCH_%d", n), fmt.Sprintf("prefetches the next tile's %d bytes of a step (subPrefetch).", n), func(l *lines) {
		nLines := (n + 63) / 64
		l.e("\tTESTQ R10, R10")
		l.e("\tJZ nopf")
		i := 0
		for ; i+16 <= nLines; i += 16 {
			l.e("\tSUB_PREFETCH_1K(%d)", 64*i)
		}
		for ; i < nLines; i++ {
			l.e("\tPREFETCHT0 %d(R10)", 64*i)
		}
		l.e("\tADDQ $%d, R10", n)
		l.e("nopf:")
	}}
}

// subPrefetch1K is SUB_PREFETCH_1K: the packers' prefetches (subPackPf)
// of 1 KiB of the next tile, 16 lines from off(R10).
func subPrefetch1K(l *lines) {
	for i := 0; i < 16; i++ {
		l.e("\tPREFETCHT0 (off+%d)(R10)", 64*i)
	}
}

// subKernel writes subKernelQ4K or (q6) subKernelQ6K.
func subKernel(l *lines, q6 bool) {
	name := "subKernelQ4K"
	if q6 {
		name = "subKernelQ6K"
	}
	if q6 {
		l.e("// func %s(a *subArgs)", name)
		l.e("//")
		l.e("// subKernelQ4K for Q6_K weights.")
	} else {
		l.doc(fmt.Sprintf(`
// func %s(a *subArgs)
//
// One row tile (16 rows, one per dword lane) over every block of %d tokens:
// per super-block and sub-block, the int32 sums of raw quant × activation
// by VPDPBUSD (the activation dwords broadcast) in Z0-Z11, one per token,
// times the sub-block's scales (VPMULLD) into Z12-Z23; per super-block the
// block-sum term by VPDPWSSD and the float scaling into acc (tokens × 16
// floats); after the last super-block acc goes to dst under the row mask.
//
// Registers: DI args, R8 weight super-block, R9 activation super-block,
// AX/SI/DX the chunk's weights, activations and scales, R11 acc, R12
// super-blocks left, R13 token block, R14 tokens left, BX dst.
`, name, subTok))
	}
	l.e("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	l.e("\t%s", subKernelCall("SUB_KERNEL", q6))
}

// subKernelCall is the invocation of kernel (SUB_KERNEL, SUB_KERNEL_W) for
// Q4_K or (q6) Q6_K: its chunk and epilogue macros and weight bytes.
func subKernelCall(kernel string, q6 bool) string {
	if q6 {
		return fmt.Sprintf("%s(SUB_CHUNK_Q6K, SUB_EPILOGUE_Q6K, %d)", kernel, subQ6Bytes)
	}
	return fmt.Sprintf("%s(SUB_CHUNK_Q4K, SUB_EPILOGUE_Q4K, %d)", kernel, subQ4Bytes)
}

// The kernels' bodies are the macros SUB_KERNEL and SUB_KERNEL_W, one per
// loop order for both formats: step is the format's chunk (SUB_CHUNK_Q4K,
// SUB_CHUNK_Q6K), epilogue its super-block epilogue, wbytes its weight
// bytes a super-block. Their labels are function-scoped: one use per TEXT.
const subKernelLabel = "k"

// subKernelBody is SUB_KERNEL, the body of subKernel.
func subKernelBody(l *lines) {
	lbl := subKernelLabel
	l.e("\tMOVQ a+0(FP), DI")
	l.e("\tMOVQ 8(DI), R13")
	l.e("\tMOVQ 16(DI), BX")
	l.e("\tMOVQ 40(DI), R14")
	l.e("\tMOVQ 48(DI), AX")
	l.e("\tKMOVW AX, K1")
	l.e("\tMOVQ 56(DI), R11")
	l.e("%sblock:", lbl)
	l.e("\tSUB_ZERO_REGS")
	l.e("\tSUB_ZERO_ACC")
	l.e("\tMOVQ 0(DI), R8")
	l.e("\tMOVQ R13, R9")
	l.e("\tMOVQ 32(DI), R12")
	l.e("%ssb:", lbl)
	subSuperBlock(l, lbl, "R9")
	l.e("\tADDQ $wbytes, R8")
	l.e("\tADDQ $%d, R9", subActBytes)
	l.e("\tDECQ R12")
	l.e("\tJNZ %ssb", lbl)
	// Store min(subTok, tokens left) rows of dst.
	l.e("\tMOVQ R14, CX")
	l.e("\tCMPQ CX, $%d", subTok)
	l.e("\tJLE %scount", lbl)
	l.e("\tMOVQ $%d, CX", subTok)
	l.e("%scount:", lbl)
	l.e("\tMOVQ 24(DI), DX")
	l.e("\tMOVQ R11, SI")
	l.e("\tSUB_STORE")
	l.e("\tADDQ 64(DI), R13")
	l.e("\tSUBQ $%d, R14", subTok)
	l.e("\tJGT %sblock", lbl)
	l.e("\tVZEROUPPER")
	l.e("\tRET")
}

// subZeroRegs is SUB_ZERO_REGS: Z0-Z23 zeroed (a token block's sums), by
// the ZERO_Za_Zb macros of variants/avx512/lanes_amd64.h.
func subZeroRegs(l *lines) {
	for z := 0; z < 2*subTok; z += 8 {
		l.e("\tZERO_Z%d_Z%d", z, z+7)
	}
}

// subZeroAcc is SUB_ZERO_ACC: the subTok rows of acc at R11 set to Z0
// (zeroed by SUB_ZERO_REGS), the first eight by lanes_amd64.h's STORE8Z.
func subZeroAcc(l *lines) {
	l.e("\tSTORE8Z(R11, Z0, Z0, Z0, Z0, Z0, Z0, Z0, Z0)")
	for t := 8; t < subTok; t++ {
		l.e("\tVMOVUPS Z0, %d(R11)", 64*t)
	}
}

// subStore is SUB_STORE, the loop that stores CX rows of acc at SI to dst
// at BX (stride DX) under the row mask K1. Its label is function-scoped.
func subStore(l *lines) {
	lbl := subKernelLabel
	l.e("%sstore:", lbl)
	l.e("\tVMOVUPS (SI), Z0")
	l.e("\tVMOVUPS Z0, K1, (BX)")
	l.e("\tADDQ DX, BX")
	l.e("\tADDQ $64, SI")
	l.e("\tDECQ CX")
	l.e("\tJNZ %sstore", lbl)
}

// subSuperBlock writes one super-block of one token block: the products of
// the four chunks into Z12-Z23 (step: SUB_CHUNK_Q4K/Q6K), then the
// epilogue into acc at R11 (epilogue: SUB_EPILOGUE_Q4K/Q6K). R8 is the weight super-block, act the
// register holding the activation super-block; clobbers AX, CX, DX, SI.
func subSuperBlock(l *lines, lbl, act string) {
	l.e("\tMOVQ R8, AX")
	l.e("\tMOVQ %s, SI", act)
	l.e("\tLEAQ %d(R8), DX", subScales)
	l.e("\tMOVQ $4, CX")
	l.e("%schunk:", lbl)
	l.e("\tstep")
	l.e("\tJNZ %schunk", lbl)
	l.e("\tepilogue(%s)", act)
}

// subChunk is one chunk (16 k-quads) of a super-block: its sub-blocks'
// products into Z12-Z23 (SUB_SUBBLOCK8 or, q6, SUB_SUBBLOCK4), then AX, SI,
// DX advanced to the next chunk and CX counted down (the JNZ back is the
// caller's, which owns the label).
func subChunk(l *lines, q6 bool) {
	quadsPerSub := 8
	if q6 {
		quadsPerSub = 4
	}
	subsPerChunk := 16 / quadsPerSub
	for s := 0; s < subsPerChunk; s++ {
		l.e("\tSUB_SUBBLOCK%d(%d)", quadsPerSub, s)
	}
	l.e("\tADDQ $1024, AX")
	l.e("\tADDQ $%d, SI", subTok*64)
	l.e("\tADDQ $%d, DX", 64*subsPerChunk)
	l.e("\tDECQ CX")
}

// subSubBlock returns SUB_SUBBLOCKn(s): the n k-quads of sub-block s,
// four at a time (SUB_QUADS4), then its scaling (SUB_SCALE).
func subSubBlock(n int) macro {
	return macro{fmt.Sprintf("SUB_SUBBLOCK%d(s)", n), fmt.Sprintf("is sub-block s of %d k-quads (subSubBlock).", n), func(l *lines) {
		for q := 0; q < n; q += 4 {
			l.e("\tSUB_QUADS4((%d*s+%d))", n, q)
		}
		l.e("\tSUB_SCALE(s)")
	}}
}

// subQuads4 is SUB_QUADS4(q0): k-quads q0 to q0+3 (SUB_QUAD).
func subQuads4(l *lines) {
	for q := 0; q < 4; q++ {
		l.e("\tSUB_QUAD((q0+%d))", q)
	}
}

// zRegs4 names Zb … Zb+3, a macro's four token registers.
func zRegs4(b int) string {
	return fmt.Sprintf("Z%d, Z%d, Z%d, Z%d", b, b+1, b+2, b+3)
}

// subQuad is SUB_QUAD: k-quad qi of the chunk's weights (AX) times each
// token's activation dword (SI), added into Z0-Z11 four tokens at a time
// (SUB_DOT4).
func subQuad(l *lines) {
	l.e("\tVMOVDQU32 (64*qi)(AX), Z24")
	for t := 0; t < subTok; t += 4 {
		l.e("\tSUB_DOT4(qi, %d, %s)", 64*t, zRegs4(t))
	}
}

// subDot4 is SUB_DOT4(qi, row, z0, z1, z2, z3): zi += k-quad Z24 times the
// activation dword qi of the token row bytes + 64·i into SI.
func subDot4(l *lines) {
	for i := 0; i < 4; i++ {
		l.e("\tVPDPBUSD.BCST (row+%d+4*qi)(SI), Z24, z%d", 64*i, i)
	}
}

// subScale is SUB_SCALE: the sums of sub-block s (Z0-Z11) times its scales
// (DX) into Z12-Z23, Z0-Z11 cleared for the next sub-block, four tokens at
// a time (SUB_SCALE4).
func subScale(l *lines) {
	l.e("\tVMOVDQU32 (64*s)(DX), Z25")
	for t := 0; t < subTok; t += 4 {
		l.e("\tSUB_SCALE4(%s, %s)", zRegs4(t), zRegs4(subTok+t))
	}
}

// subScale4 is SUB_SCALE4(s0, s1, s2, s3, a0, a1, a2, a3): SUB_SCALE_TOKEN
// of four tokens.
func subScale4(l *lines) {
	for i := 0; i < 4; i++ {
		l.e("\tSUB_SCALE_TOKEN(s%d, a%d)", i, i)
	}
}

// subScaleToken is SUB_SCALE_TOKEN(sum, acc): one token's sub-block sum
// times the scales (Z25) added into acc, sum cleared.
func subScaleToken(l *lines) {
	l.e("\tVPMULLD Z25, sum, sum")
	l.e("\tVPADDD sum, acc, acc")
	l.e("\tVPXORD sum, sum, sum")
}

// subEpilogue is a super-block's epilogue: block sums, then
// acc[t] += dx·(…), four tokens at a time; act holds the activation
// super-block.
func subEpilogue(l *lines, q6 bool, act string) {
	if !q6 {
		l.e("\tSUB_COEF4(%d)", subQ4Coef)
		l.e("\tVMOVUPS %d(R8), Z24", subQ4D)
		l.e("\tVMOVUPS %d(R8), Z25", subQ4Dmin)
		for t := 0; t < subTok; t += 4 {
			l.e("\tSUB_EPI_Q4K_4(%s, %d, %s, %s)", act, t, zRegs4(t), zRegs4(subTok+t))
		}
		return
	}
	for half := 0; half < 2; half++ {
		l.e("\tSUB_COEF4(%d)", subQ6Coef+256*half)
		for t := 0; t < subTok; t += 4 {
			l.e("\tSUB_BSUMS_4(%s, %d, %s)", act, subActBsums+32*t+16*half, zRegs4(subTok+t))
		}
	}
	l.e("\tVMOVUPS %d(R8), Z24", subQ6D)
	for t := 0; t < subTok; t += 4 {
		l.e("\tSUB_EPI_Q6K_4(%s, %d, %s)", act, t, zRegs4(subTok+t))
	}
}

// The epilogue's macros (subEpilogue): SUB_COEF4(off) loads four
// block-sum coefficient vectors at off(R8) into Z26-Z29; SUB_BSUMS(act,
// off, z) adds their products with the four block-sum word pairs at
// off(act) into z, SUB_BSUMS_4 for four tokens' (32 bytes apart);
// SUB_ACC_ADD(act, t) adds Z30 times token t's activation scale into its
// acc row; SUB_EPI_Q4K_TOKEN and SUB_EPI_Q6K_TOKEN are one token's
// epilogue, the _4 forms four tokens'.
var subEpilogueMacros = []macro{
	{"SUB_COEF4(off)", "loads the block-sum coefficients at off(R8) into Z26-Z29.", func(l *lines) {
		for h := 0; h < 4; h++ {
			l.e("\tVMOVDQU32 (off+%d)(R8), Z%d", 64*h, 26+h)
		}
	}},
	{"SUB_BSUMS(act, off, z)", "adds the block-sum products at off(act) into z.", func(l *lines) {
		for h := 0; h < 4; h++ {
			l.e("\tVPDPWSSD.BCST (off+%d)(act), Z%d, z", 4*h, 26+h)
		}
	}},
	{"SUB_BSUMS_4(act, off, z0, z1, z2, z3)", "is SUB_BSUMS of four tokens.", func(l *lines) {
		for i := 0; i < 4; i++ {
			l.e("\tSUB_BSUMS(act, (off+%d), z%d)", 32*i, i)
		}
	}},
	{"SUB_ACC_ADD(act, t)", "adds Z30 times token t's scale into its acc row.", func(l *lines) {
		l.e("\tVMOVUPS (64*t)(R11), Z31")
		l.e("\tVFMADD231PS.BCST (%d+4*t)(act), Z30, Z31", subActD)
		l.e("\tVMOVUPS Z31, (64*t)(R11)")
	}},
	{"SUB_EPI_Q4K_TOKEN(act, t, sum, acc)", "is token t's Q4_K epilogue (sums sum and acc).", func(l *lines) {
		l.e("\tSUB_BSUMS(act, (%d+32*t), sum)", subActBsums)
		l.e("\tVCVTDQ2PS sum, sum")
		l.e("\tVCVTDQ2PS acc, acc")
		l.e("\tVMULPS Z24, acc, Z30")
		l.e("\tVFNMADD231PS Z25, sum, Z30")
		l.e("\tSUB_ACC_ADD(act, t)")
		l.e("\tVPXORD sum, sum, sum")
		l.e("\tVPXORD acc, acc, acc")
	}},
	{"SUB_EPI_Q4K_4(act, t, s0, s1, s2, s3, a0, a1, a2, a3)", "is SUB_EPI_Q4K_TOKEN of tokens t to t+3.", func(l *lines) {
		for i := 0; i < 4; i++ {
			l.e("\tSUB_EPI_Q4K_TOKEN(act, (t+%d), s%d, a%d)", i, i, i)
		}
	}},
	{"SUB_EPI_Q6K_TOKEN(act, t, acc)", "is token t's Q6_K epilogue (sum acc).", func(l *lines) {
		l.e("\tVCVTDQ2PS acc, acc")
		l.e("\tVMULPS Z24, acc, Z30")
		l.e("\tSUB_ACC_ADD(act, t)")
		l.e("\tVPXORD acc, acc, acc")
	}},
	{"SUB_EPI_Q6K_4(act, t, a0, a1, a2, a3)", "is SUB_EPI_Q6K_TOKEN of tokens t to t+3.", func(l *lines) {
		for i := 0; i < 4; i++ {
			l.e("\tSUB_EPI_Q6K_TOKEN(act, (t+%d), a%d)", i, i)
		}
	}},
}

// subKernelW writes subKernelQ4KW or (q6) subKernelQ6KW: subKernel's loops
// the other way round, super-blocks outside and the group's token blocks
// inside, so a super-block's weights (5-6 KiB) stay in L1 across every
// block instead of the row tile's whole panel streaming from L2 once per
// block. acc holds the whole group (⌈n/12⌉ blocks × 12 tokens × 16 floats).
//
// Registers: DI args, R8 weight super-block, R9 activation super-block of
// block 0, R10 of the current block, R11 its acc, R12 super-blocks left,
// R13 blocks left, BX dst.
func subKernelW(l *lines, q6 bool) {
	name := "subKernelQ4KW"
	if q6 {
		name = "subKernelQ6KW"
	}
	l.e("// func %s(a *subArgs)", name)
	l.e("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	l.e("\t%s", subKernelCall("SUB_KERNEL_W", q6))
}

// subKernelWBody is SUB_KERNEL_W, the body of subKernelW.
func subKernelWBody(l *lines) {
	lbl := subKernelLabel
	l.e("\tMOVQ a+0(FP), DI")
	l.e("\tMOVQ 48(DI), AX")
	l.e("\tKMOVW AX, K1")
	// Blocks: ⌈n/12⌉; acc = 0 for all of them, Z0-Z23 = 0.
	l.e("\tMOVQ 40(DI), AX")
	l.e("\tADDQ $%d, AX", subTok-1)
	l.e("\tMOVQ $0, DX")
	l.e("\tMOVQ $%d, CX", subTok)
	l.e("\tDIVQ CX")
	l.e("\tMOVQ AX, R14 // blocks")
	l.e("\tSUB_ZERO_REGS")
	l.e("\tMOVQ 56(DI), R11")
	l.e("\tMOVQ R14, CX")
	l.e("%szero:", lbl)
	l.e("\tSUB_ZERO_ACC")
	l.e("\tADDQ $%d, R11", 64*subTok)
	l.e("\tDECQ CX")
	l.e("\tJNZ %szero", lbl)
	l.e("\tMOVQ 0(DI), R8")
	l.e("\tMOVQ 8(DI), R9")
	l.e("\tMOVQ 32(DI), R12")
	l.e("%ssb:", lbl)
	l.e("\tMOVQ R9, R10")
	l.e("\tMOVQ 56(DI), R11")
	l.e("\tMOVQ R14, R13")
	l.e("%sblk:", lbl)
	subSuperBlock(l, lbl, "R10")
	l.e("\tADDQ 64(DI), R10")
	l.e("\tADDQ $%d, R11", 64*subTok)
	l.e("\tDECQ R13")
	l.e("\tJNZ %sblk", lbl)
	l.e("\tADDQ $wbytes, R8")
	l.e("\tADDQ $%d, R9", subActBytes)
	l.e("\tDECQ R12")
	l.e("\tJNZ %ssb", lbl)
	// Store the n tokens: acc → dst under the row mask.
	l.e("\tMOVQ 40(DI), CX")
	l.e("\tMOVQ 16(DI), BX")
	l.e("\tMOVQ 24(DI), DX")
	l.e("\tMOVQ 56(DI), SI")
	l.e("\tSUB_STORE")
	l.e("\tVZEROUPPER")
	l.e("\tRET")
}
