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
	}, []macro{
		{"SUB_PACK_Q4K_STEP", "is one super-block of subPackQ4K (subPackQ4KStep).", subPackQ4KStep},
		{"SUB_PACK_Q6K_STEP", "is one super-block of subPackQ6K (subPackQ6KStep).", subPackQ6KStep},
		{"SUB_PACKER(load, pf, step, src, dst)", "is a packer's body (subPackerBody).", subPackerBody},
		{subNone, "is nothing: the load and prefetch of the packers without prefetches.", func(*lines) {}},
		{"SUB_NEXT_TILE", "loads R10 with packArgs.next, the next tile to prefetch.", func(l *lines) { l.e("\tMOVQ 112(AX), R10") }},
		subPrefetch(16 * 144),
		subPrefetch(16 * 210),
		{"SUB_PREFETCH_1K(off)", "prefetches the 16 cache lines of 1 KiB at off(R10) (subPrefetch1K).", subPrefetch1K},
		{"SUB_QUAD(qi)", "adds k-quad qi of the chunk into Z0-Z11 (subQuad).", subQuad},
		{"SUB_SCALE(s)", "scales the sums of sub-block s into Z12-Z23 (subScale).", subScale},
		{"SUB_SCALE_TOKEN(sum, acc)", "scales one token's sub-block sum into acc (subScaleToken).", subScaleToken},
		{"SUB_ZERO_REGS", "zeroes Z0-Z23 (subZeroRegs).", subZeroRegs},
		{"SUB_ZERO_ACC", "stores Z0 (zero) in the 12 rows of acc at R11 (subZeroAcc).", subZeroAcc},
		{"SUB_CHUNK_Q4K", "is one chunk of a Q4_K super-block of subKernelQ4K(W) (subChunk).", func(l *lines) { subChunk(l, false) }},
		{"SUB_CHUNK_Q6K", "is one chunk of a Q6_K super-block of subKernelQ6K(W) (subChunk).", func(l *lines) { subChunk(l, true) }},
		{"SUB_EPILOGUE_Q4K(act)", "is the block-sum epilogue of a Q4_K super-block into acc at R11,\n// act the activation super-block (subEpilogue).", func(l *lines) { subEpilogue(l, false, "act") }},
		{"SUB_KERNEL(step, epilogue, wbytes)", "is the body of subKernelQ4K and subKernelQ6K (subKernelBody).", subKernelBody},
		{"SUB_KERNEL_W(step, epilogue, wbytes)", "is the body of subKernelQ4KW and subKernelQ6KW (subKernelWBody).", subKernelWBody},
		{"SUB_EPILOGUE_Q6K(act)", "is the block-sum epilogue of a Q6_K super-block into acc at R11,\n// act the activation super-block (subEpilogue).", func(l *lines) { subEpilogue(l, true, "act") }},
	})
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

// subPackQ4KStep is one super-block of subPackQ4K (SUB_PACK_Q4K_STEP).
func subPackQ4KStep(l *lines) {
	l.q4kScalesMins(subQ4D, subQ4Dmin, subQ4Coef)
	for j := 0; j < 8; j++ {
		src := 4
		if j >= 4 {
			src = 6
		}
		l.e("\tVPSLLD $%d, Z%d, Z11", 24-8*(j%4), src)
		l.e("\tVPSRLD $24, Z11, Z11")
		l.e("\tVMOVDQU32 Z11, %d(DI)   // sc%d", subScales+64*j, j)
	}
	for c := 0; c < 4; c++ {
		for kq := 0; kq < 8; kq++ {
			l.gather(16+32*c+4*kq, 16)
			l.e("\tVPANDD Z29, Z16, Z8")
			l.e("\tVMOVDQU32 Z8, %d(DI)", 64*(16*c+kq))
			l.e("\tVPSRLD $4, Z16, Z9")
			l.e("\tVPANDD Z29, Z9, Z9")
			l.e("\tVMOVDQU32 Z9, %d(DI)", 64*(16*c+8+kq))
		}
	}
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

// subPackQ6KStep is one super-block of subPackQ6K (SUB_PACK_Q6K_STEP).
func subPackQ6KStep(l *lines) {
	l.e("\tQ6K_SCALES_D")
	l.e("\tVMOVUPS Z9, %d(DI)        // d", subQ6D)
	for j := 0; j < 16; j++ {
		l.e("\tVPSLLD $%d, Z%d, Z11", 24-8*(j%4), 4+j/4)
		l.e("\tVPSRAD $24, Z11, Z11")
		l.e("\tVMOVDQU32 Z11, %d(DI)   // sc%d", subScales+64*j, j)
	}
	l.e("\tVPXORD Z12, Z12, Z12")
	for h := 0; h < 8; h++ {
		l.e("\tVPSHUFB %d(DX), Z%d, Z11", 896+64*(h%2), 4+h/2)
		l.e("\tVPSRAW $3, Z11, Z11")
		l.e("\tVPSUBW Z11, Z12, Z11")
		l.e("\tVMOVDQU32 Z11, %d(DI)   // −32·sc%d, −32·sc%d", subQ6Coef+64*h, 2*h, 2*h+1)
	}
	for n := 0; n < 2; n++ {
		for kq := 0; kq < 8; kq++ {
			l.gather(64*n+4*kq, 8)
			l.gather(64*n+32+4*kq, 9)
			l.gather(128+32*n+4*kq, 10)
			for q := 0; q < 4; q++ {
				l.e("\tQ6K_QUARTER%d", q)
				l.e("\tVMOVDQU32 Z11, %d(DI)", 64*(32*n+8*q+kq))
			}
		}
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
	subStore(l, lbl)
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

// subStore writes the loop that stores CX rows of acc at SI to dst at BX
// (stride DX) under the row mask K1.
func subStore(l *lines, lbl string) {
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

// subChunk is one chunk (16 k-quads) of a super-block: the products into
// Z12-Z23 (SUB_QUAD, SUB_SCALE), then AX, SI, DX advanced to the next
// chunk and CX counted down (the JNZ back is the caller's, which owns the
// label).
func subChunk(l *lines, q6 bool) {
	quadsPerSub := 8
	if q6 {
		quadsPerSub = 4
	}
	subsPerChunk := 16 / quadsPerSub
	for s := 0; s < subsPerChunk; s++ {
		for q := 0; q < quadsPerSub; q++ {
			l.e("\tSUB_QUAD(%d)", s*quadsPerSub+q)
		}
		l.e("\tSUB_SCALE(%d)", s)
	}
	l.e("\tADDQ $1024, AX")
	l.e("\tADDQ $%d, SI", subTok*64)
	l.e("\tADDQ $%d, DX", 64*subsPerChunk)
	l.e("\tDECQ CX")
}

// subQuad is SUB_QUAD: k-quad qi of the chunk's weights (AX) times each
// token's activation dword (SI), added into Z0-Z11 by VPDPBUSD.
func subQuad(l *lines) {
	l.e("\tVMOVDQU32 (64*qi)(AX), Z24")
	for t := 0; t < subTok; t++ {
		l.e("\tVPDPBUSD.BCST (%d+4*qi)(SI), Z24, Z%d", 64*t, t)
	}
}

// subScale is SUB_SCALE: the sums of sub-block s (Z0-Z11) times its scales
// (DX) into Z12-Z23, Z0-Z11 cleared for the next sub-block
// (SUB_SCALE_TOKEN each).
func subScale(l *lines) {
	l.e("\tVMOVDQU32 (64*s)(DX), Z25")
	for t := 0; t < subTok; t++ {
		l.e("\tSUB_SCALE_TOKEN(Z%d, Z%d)", t, subTok+t)
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
// acc[t] += dx·(…); act holds the activation super-block.
func subEpilogue(l *lines, q6 bool, act string) {
	if !q6 {
		for h := 0; h < 4; h++ {
			l.e("\tVMOVDQU32 %d(R8), Z%d", subQ4Coef+64*h, 26+h)
		}
		l.e("\tVMOVUPS %d(R8), Z24", subQ4D)
		l.e("\tVMOVUPS %d(R8), Z25", subQ4Dmin)
		for t := 0; t < subTok; t++ {
			for h := 0; h < 4; h++ {
				l.e("\tVPDPWSSD.BCST %d(%s), Z%d, Z%d", subActBsums+32*t+4*h, act, 26+h, t)
			}
			l.e("\tVCVTDQ2PS Z%d, Z%d", t, t)
			l.e("\tVCVTDQ2PS Z%d, Z%d", subTok+t, subTok+t)
			l.e("\tVMULPS Z24, Z%d, Z30", subTok+t)
			l.e("\tVFNMADD231PS Z25, Z%d, Z30", t)
			l.e("\tVMOVUPS %d(R11), Z31", 64*t)
			l.e("\tVFMADD231PS.BCST %d(%s), Z30, Z31", subActD+4*t, act)
			l.e("\tVMOVUPS Z31, %d(R11)", 64*t)
			l.e("\tVPXORD Z%d, Z%d, Z%d", t, t, t)
			l.e("\tVPXORD Z%d, Z%d, Z%d", subTok+t, subTok+t, subTok+t)
		}
	} else {
		for half := 0; half < 2; half++ {
			for h := 0; h < 4; h++ {
				l.e("\tVMOVDQU32 %d(R8), Z%d", subQ6Coef+64*(4*half+h), 26+h)
			}
			for t := 0; t < subTok; t++ {
				for h := 0; h < 4; h++ {
					l.e("\tVPDPWSSD.BCST %d(%s), Z%d, Z%d", subActBsums+32*t+4*(4*half+h), act, 26+h, subTok+t)
				}
			}
		}
		l.e("\tVMOVUPS %d(R8), Z24", subQ6D)
		for t := 0; t < subTok; t++ {
			l.e("\tVCVTDQ2PS Z%d, Z%d", subTok+t, subTok+t)
			l.e("\tVMULPS Z24, Z%d, Z30", subTok+t)
			l.e("\tVMOVUPS %d(R11), Z31", 64*t)
			l.e("\tVFMADD231PS.BCST %d(%s), Z30, Z31", subActD+4*t, act)
			l.e("\tVMOVUPS Z31, %d(R11)", 64*t)
			l.e("\tVPXORD Z%d, Z%d, Z%d", subTok+t, subTok+t, subTok+t)
		}
	}
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
	subStore(l, lbl)
	l.e("\tVZEROUPPER")
	l.e("\tRET")
}
