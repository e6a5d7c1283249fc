package main

// variants/amx/pack_amd64.s: the unrolled AVX-512 unpackers of Q4_K and
// Q6_K weights into AMX tile panels (formerly genpack.py). Written as text,
// not through avo, so that the output stays byte-identical to the file the
// Python generator wrote: that code only runs on the Intel AMX machine, so
// it is not changed where it cannot be tested.

import (
	"fmt"
	"strings"
)

func init() {
	registerText("amx", "pack_amd64.s", amxPack)
	registerText("amx", "pack_amd64.h", amxPackHeader)
}

type lines []string

func (l *lines) e(format string, args ...any) { *l = append(*l, fmt.Sprintf(format, args...)) }

// The blocks that pack_amd64.s and sub_amd64.s repeat are Go assembler
// macros in pack_amd64.h (amxPackHeader), written once there and invoked
// by name; the helpers below emit the invocations.

// doc emits text, a block of assembly comments, without its surrounding
// white space, line by line.
func (l *lines) doc(text string) {
	for _, s := range strings.Split(strings.TrimSpace(text), "\n") {
		l.e("%s", s)
	}
}

// gather: Zz = the dword at off(SI) of each row in the mask R8 (GATHER).
func (l *lines) gather(off, z int) { l.e("\tGATHER(%d, Z%d)", off, z) }

// constants loads the 14 constant vectors at DX (PACK_CONSTANTS).
func (l *lines) constants() { l.e("\tPACK_CONSTANTS") }

// split stores the word products Z12 (even) and Z13 (odd) as two 7-bit
// digit rows at off and off+1024 of the panel (SPLIT).
func (l *lines) split(off int) { l.e("\tSPLIT(%d)", off) }

// macro is one #define of pack_amd64.h: its name and parameters (as
// "NAME(a, b)" or "NAME"), what it does, and its body, emitted in terms of
// the parameters' names.
type macro struct {
	sig, doc string
	body     func(l *lines)
}

// packMacros are the blocks shared by the packers and the sub-block
// kernels, in the order of the header.
var packMacros = []macro{
	{"PACK_ARGS", "loads the packArgs at a+0(FP): DI panel, SI w at row 0 of the first\n// super-block, CX super-blocks, R8 row mask, DX constants, Z31 row offsets.", func(l *lines) {
		l.e("\tMOVQ a+0(FP), AX")
		l.e("\tMOVQ 0(AX), DI")
		l.e("\tMOVQ 8(AX), SI")
		l.e("\tMOVQ 16(AX), CX")
		l.e("\tMOVQ 24(AX), R8")
		l.e("\tMOVQ 32(AX), DX")
		l.e("\tVMOVDQU32 40(AX), Z31")
	}},
	{"PACK_CONSTANTS", "loads the 14 constant vectors at DX.", func(l *lines) {
		for i, z := range []int{30, 29, 28, 27, 26, 25, 17, 18, 19, 20, 21, 22, 23, 24} {
			l.e("\tVMOVDQU32 %d(DX), Z%d", 64*i, z)
		}
	}},
	{"GATHER(off, z)", "z = the dword at off(SI) of each row in the mask R8.", func(l *lines) {
		l.e("\tVPXORD z, z, z")
		l.e("\tKMOVW R8, K2")
		l.e("\tVPGATHERDD off(SI)(Z31*1), K2, z")
	}},
	{"SPLIT(off)", "stores the word products Z12 (even) and Z13 (odd) as two 7-bit digit\n// rows at off and off+1024 of the panel.", func(l *lines) {
		l.e("\tVPANDD Z27, Z12, Z14")
		l.e("\tVPSLLW $8, Z13, Z15")
		l.e("\tVPTERNLOGD $0xF8, Z26, Z15, Z14")
		l.e("\tVMOVDQU32 Z14, off(DI)")
		l.e("\tVPSRLW $7, Z12, Z14")
		l.e("\tVPSLLW $1, Z13, Z15")
		l.e("\tVPTERNLOGD $0xF8, Z25, Z15, Z14")
		l.e("\tVMOVDQU32 Z14, (off+1024)(DI)")
	}},
	{"Q4K_SCALES_MINS(dOff, dminOff, coefOff)", q4kScalesMinsDoc, q4kScalesMinsBody},
	{"Q6K_SCALES_D", "gathers a Q6_K super-block's sixteen scale bytes of the 16 rows into\n// Z4-Z7 (4 per dword) and its d as float32 into Z9 (clobbers Z3).", func(l *lines) {
		for i := 0; i < 4; i++ {
			l.e("\tGATHER(%d, Z%d)", 192+4*i, 4+i)
		}
		l.e("\tGATHER(206, Z3)")
		l.e("\tVPSRLD $16, Z3, Z9")
		l.e("\tVPMOVDW Z9, Y9")
		l.e("\tVCVTPH2PS Y9, Z9")
	}},
}

// packerMacros are the steps of the tile packers (pack_amd64.s) alone.
var packerMacros = []macro{
	{"PACK_PREFETCH(lines, blk)", "is a packer step's prefetch of the next row tile (packPrefetch).", packPrefetch},
	packPrefetchLines(144),
	packPrefetchLines(210),
	packPrefetchLines(176),
	{"PACK_Q5K_CHUNK(c, rlo, rhi, src, se0, so0, se1, so1)", "is chunk c of a Q5_K super-block (packQ5KChunk).", packQ5KChunk},
	{"PACK_Q5K_QUAD(src, qhsrc, lo, hi, rlo, rhi)", "is one k-quad of a Q5_K chunk (packQ5KQuad).", packQ5KQuad},
	{"PACK_Q4K_CHUNK(c, src, se0, so0, se1, so1)", "is chunk c of a Q4_K super-block (packQ4KChunk).", packQ4KChunk},
	{"PACK_Q4K_QUAD(src, lo, hi)", "is one k-quad of a Q4_K chunk (packQ4KQuad).", packQ4KQuad},
	{"PACK_Q6K_COEF(sel, sc, off)", "is a pair of Q6_K bsum coefficients (packQ6KCoef).", packQ6KCoef},
	{"PACK_Q6K_HALF(n, scA, scB)", "is half n of a Q6_K super-block (packQ6KHalf).", packQ6KHalf},
	{"PACK_Q6K_QUAD(n, kq, scA, scB, se0, so0, se1, so1)", "is one k-quad of a Q6_K half (packQ6KQuad).", packQ6KQuad},
	{"PACK_Q6K_EMIT(se, so, sc, off)", "is one Q6_K B row times its scales (packQ6KEmit).", packQ6KEmit},
}

// q6kQuarters are the Q6K_QUARTERq macros: quarter q of the Q6_K quants as
// both Q6_K packers gather them (ql dwords Z8, Z9; qh dword Z10) into Z11,
// the 4-bit part of ql (low nibbles for quarters 0-1, high for 2-3) with
// qh's bit pair 2q, 2q+1 above it.
func q6kQuarters() []macro {
	var ms []macro
	for q := 0; q < 4; q++ {
		ql, shift := 8+q%2, 4-2*q // qh bits 2q.. to bits 4-5
		ms = append(ms, macro{fmt.Sprintf("Q6K_QUARTER%d", q), fmt.Sprintf("is quarter %d of the Q6_K quants (q6kQuarters), into Z11.", q), func(l *lines) {
			if q < 2 {
				l.e("\tVPANDD Z29, Z%d, Z11", ql)
			} else {
				l.e("\tVPSRLD $4, Z%d, Z11", ql)
				l.e("\tVPANDD Z29, Z11, Z11")
			}
			qh := 10
			if shift > 0 {
				l.e("\tVPSLLD $%d, Z10, Z16", shift)
				qh = 16
			} else if shift < 0 {
				l.e("\tVPSRLD $%d, Z10, Z16", -shift)
				qh = 16
			}
			l.e("\tVPTERNLOGD $0xF8, Z28, Z%d, Z11", qh)
		}})
	}
	return ms
}

// amxPackHeader writes variants/amx/pack_amd64.h: packMacros and the
// Q6K_QUARTERq macros.
func amxPackHeader() []byte {
	return macroHeader("amx_pack.go", []string{
		"// The blocks that the packers (pack_amd64.s) and the sub-block kernels",
		"// (sub_amd64.s) share, written once as macros.",
	}, append(append(packMacros, q6kQuarters()...), packerMacros...))
}

// macroHeader writes a generated .h of variants/amx (by src): intro, then
// ms, each a #define whose body lines are joined by "; \" (comments left
// out: they would swallow the line continuation).
func macroHeader(src string, intro []string, ms []macro) []byte {
	var l lines
	l.e("// Code generated by variants/_gen (%s); DO NOT EDIT.", src)
	l.e("")
	l = append(l, intro...)
	for _, m := range ms {
		var body lines
		m.body(&body)
		l.e("")
		l.e("// %s %s", strings.FieldsFunc(m.sig, func(r rune) bool { return r == '(' || r == ' ' })[0], m.doc)
		if len(body) == 0 {
			l.e("#define %s", m.sig)
			continue
		}
		l.e("#define %s \\", m.sig)
		for i, b := range body {
			if j := strings.Index(b, "//"); j >= 0 {
				b = b[:j]
			}
			b = strings.TrimRight(b, " ")
			switch {
			case i == len(body)-1:
			case strings.HasSuffix(b, ":"): // a label, no statement to end
				b += " \\"
			default:
				b += "; \\"
			}
			l.e("%s", b)
		}
	}
	return []byte(strings.Join(l, "\n") + "\n")
}

// asmHead opens a generated .s file of variants/amx written by src: the
// build constraint, the generated-code line and the includes.
func (l *lines) asmHead(src string) {
	l.e("//go:build !noasm")
	l.e("")
	l.e("// Code generated by variants/_gen (%s); DO NOT EDIT.", src)
	l.e("")
	l.e("#include \"textflag.h\"")
	l.e("#include \"pack_amd64.h\"")
}

func amxPack() []byte {
	var l lines
	l.asmHead("amx_pack.go")
	l.e("")
	l.doc(q4kPackDoc)
	packQ4KBody(&l)
	l.e("")
	l.doc(q6kPackDoc)
	packQ6KBody(&l)
	l.e("")
	l.doc(q5kPackDoc)
	packQ5KBody(&l)
	return []byte(strings.Join(l, "\n") + "\n")
}

// packOpen opens the tile packer name: the arguments, pre (lines loaded
// after them), the prefetch registers, the constants, then the top of the
// super-block step at label, which prefetches that super-block (blk bytes)
// of the next row tile's 16 rows (R10: packArgs.next, advanced blk bytes a
// step, nil: no prefetches; R12: the row stride, packArgs.idx[1]; R11, R13
// the row loop), every cache line a block can touch (blockLines).
func (l *lines) packOpen(name, label string, blk int, pre ...string) {
	l.e("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	l.e("\tPACK_ARGS")
	for _, s := range pre {
		l.e("%s", s)
	}
	l.e("\tMOVQ 112(AX), R10        // next tile's row 0 (nil: no prefetches)")
	l.e("\tMOVLQSX 44(AX), R12      // row stride: idx[1]")
	l.constants()
	l.e("%s:", label)
	l.e("\tPACK_PREFETCH(PACK_PF_LINES_%d, %d)", blk, blk)
}

// packPrefetch is PACK_PREFETCH(lines, blk): unless R10 is nil, lines (the
// PREFETCHT0s of one row's blk-byte super-block at R11, PACK_PF_LINES_blk)
// for each of the 16 rows from R10 (stride R12), then R10 advanced blk
// bytes. Its labels are function-scoped: one use per TEXT.
func packPrefetch(l *lines) {
	l.e("\tTESTQ R10, R10")
	l.e("\tJZ nopf")
	l.e("\tMOVQ R10, R11")
	l.e("\tMOVL $16, R13")
	l.e("pfrow:")
	l.e("\tlines")
	l.e("\tADDQ R12, R11")
	l.e("\tDECL R13")
	l.e("\tJNZ pfrow")
	l.e("\tADDQ $blk, R10")
	l.e("nopf:")
}

// packPrefetchLines is the PACK_PF_LINES_blk macro: the PREFETCHT0s at R11
// of every cache line a blk-byte super-block can touch (blockLines).
func packPrefetchLines(blk int) macro {
	return macro{fmt.Sprintf("PACK_PF_LINES_%d", blk), fmt.Sprintf("prefetches the lines of a %d-byte super-block at R11 (blockLines).", blk), func(l *lines) {
		for _, off := range blockLines(blk) {
			l.e("\tPREFETCHT0 %d(R11)", off)
		}
	}}
}

// packClose ends a tile packer's super-block step (blk weight bytes a
// row) and the packer.
func (l *lines) packClose(label string, blk int) {
	l.e("\tADDQ $%d, SI", blk)
	l.e("\tADDQ $8832, DI")
	l.e("\tDECQ CX")
	l.e("\tJNZ %s", label)
	l.e("\tVZEROUPPER")
	l.e("\tRET")
}

// blockLines are the offsets whose PREFETCHT0s cover every cache line a
// blk-byte super-block can touch: it starts at a multiple of blk, so its
// offset within a line is a multiple of gcd(blk, 64); every 64th byte, and
// the last byte where some start puts it on a line of its own (Q6_K's 210
// bytes span up to five lines, Q4_K's 144 three).
func blockLines(blk int) []int {
	var offs []int
	for off := 0; off < blk; off += 64 {
		offs = append(offs, off)
	}
	g := 64
	for blk%g != 0 {
		g /= 2
	}
	last := offs[len(offs)-1]
	for o := 0; o < 64; o += g {
		if (o+blk-1)/64 != (o+last)/64 {
			return append(offs, blk-1)
		}
	}
	return offs
}

// packQ4KBody writes packQ4KTiles: per chunk c, PACK_Q4K_CHUNK.
func packQ4KBody(l *lines) {
	packK4Body(l, "packQ4KTiles", 144, nil, func(c int) string { return fmt.Sprintf("PACK_Q4K_CHUNK(%d", c) })
}

// packK4Body writes a tile packer of the Q4_K header (Q4_K, Q5_K): name over
// blk-byte blocks, the header (Q4K_SCALES_MINS, the unused coefficient
// slots zeroed), pre (lines after it), then per chunk c the macro call that
// chunk(c) opens, given the chunk's scale source and selectors.
func packK4Body(l *lines, name string, blk int, pre []string, chunk func(c int) string) {
	l.packOpen(name, "sb", blk)
	l.q4kScalesMins(8192, 8256, 8320)
	l.e("\tVPXORD Z11, Z11, Z11")
	for h := 4; h < 8; h++ {
		l.e("\tVMOVDQU32 Z11, %d(DI)", 8320+64*h)
	}
	for _, s := range pre {
		l.e("%s", s)
	}
	for c := 0; c < 4; c++ {
		src := 4 // scales of groups 2c, 2c+1: bytes of Z4 (0-3) or Z6 (4-7)
		if c >= 2 {
			src = 6
		}
		g := 2 * c % 4
		l.e("\t%s, Z%d, Z%d, Z%d, Z%d, Z%d)", chunk(c), src, 17+g, 21+g, 18+g, 22+g)
	}
	l.packClose("sb", blk)
}

// packQ4KChunk is PACK_Q4K_CHUNK(c, src, se0, so0, se1, so1): chunk c of a
// Q4_K super-block, its two scale groups' even/odd selectors se0/so0 (low
// nibbles) and se1/so1 (high nibbles) of the scale bytes in src into Z0-Z3,
// then its eight k-quad rows (PACK_Q4K_QUAD).
func packQ4KChunk(l *lines) {
	chunkSelectors(l)
	for kq := 0; kq < 8; kq++ {
		l.e("\tPACK_Q4K_QUAD((16+32*c+%d), (2048*c+%d), (2048*c+%d))", 4*kq, 64*kq, 64*(kq+8))
	}
}

// packQ4KQuad is PACK_Q4K_QUAD(src, lo, hi): the quant dword at src of the
// 16 rows, its low nibbles times the scales into panel row lo, its high
// nibbles into hi.
func packQ4KQuad(l *lines) {
	l.e("\tGATHER(src, Z16)")
	l.e("\tVPANDD Z29, Z16, Z8")
	l.e("\tVPSRLD $4, Z16, Z9")
	l.e("\tVPANDD Z29, Z9, Z9")
	l.e("\tVPMADDUBSW Z0, Z8, Z12")
	l.e("\tVPMADDUBSW Z1, Z8, Z13")
	l.e("\tSPLIT(lo)")
	l.e("\tVPMADDUBSW Z2, Z9, Z12")
	l.e("\tVPMADDUBSW Z3, Z9, Z13")
	l.e("\tSPLIT(hi)")
}

// packQ5KBody writes packQ5KTiles: packQ4KTiles's steps over Q5_K's
// 176-byte blocks (the same header; qs at 48), Z11 0x10 a byte once the
// super-block's header is out, then per chunk c PACK_Q5K_CHUNK with its
// rotations.
func packQ5KBody(l *lines) {
	packK4Body(l, "packQ5KTiles", 176, []string{"\tMOVL $0x10101010, R9", "\tVPBROADCASTD R9, Z11"}, func(c int) string {
		rlo, rhi := q5kRotations(c)
		return fmt.Sprintf("PACK_Q5K_CHUNK(%d, %d, %d", c, rlo, rhi)
	})
}

// chunkSelectors puts the chunk's scale multipliers, picked from the scale
// bytes in src, in Z0/Z1 (even/odd bytes, low nibbles) and Z2/Z3 (high).
func chunkSelectors(l *lines) {
	l.e("\tVPSHUFB se0, src, Z0")
	l.e("\tVPSHUFB so0, src, Z1")
	l.e("\tVPSHUFB se1, src, Z2")
	l.e("\tVPSHUFB so1, src, Z3")
}

// packQ5KChunk is PACK_Q5K_CHUNK(c, rlo, rhi, src, se0, so0, se1, so1):
// PACK_Q4K_CHUNK for chunk c of a Q5_K super-block, each nibble joined with
// its fifth bit before the scale multiply (PACK_Q5K_QUAD). q·sc reaches
// 31·63 = 1953: hi digits up to 15.
func packQ5KChunk(l *lines) {
	chunkSelectors(l)
	for kq := 0; kq < 8; kq++ {
		l.e("\tPACK_Q5K_QUAD((48+32*c+%d), %d, (2048*c+%d), (2048*c+%d), rlo, rhi)", 4*kq, 16+4*kq, 64*kq, 64*(kq+8))
	}
}

// packQ5KQuad is PACK_Q5K_QUAD(src, qhsrc, lo, hi, rlo, rhi): the quant
// dword at src and the qh dword at qhsrc of the 16 rows (gathered again for
// each chunk: no register is left to keep the eight), the low nibbles
// joined with qh rotated left by rlo, the high ones with qh rotated by rhi
// (bit 2c or 2c+1 of each byte to its bit 4; Z11 keeps only that bit),
// times the scales into panel rows lo and hi.
func packQ5KQuad(l *lines) {
	l.e("\tGATHER(src, Z16)")
	l.e("\tGATHER(qhsrc, Z10)")
	l.e("\tVPANDD Z29, Z16, Z8")
	l.e("\tVPROLD $rlo, Z10, Z5")
	l.e("\tVPTERNLOGD $0xF8, Z11, Z5, Z8")
	l.e("\tVPSRLD $4, Z16, Z9")
	l.e("\tVPANDD Z29, Z9, Z9")
	l.e("\tVPROLD $rhi, Z10, Z7")
	l.e("\tVPTERNLOGD $0xF8, Z11, Z7, Z9")
	l.e("\tVPMADDUBSW Z0, Z8, Z12")
	l.e("\tVPMADDUBSW Z1, Z8, Z13")
	l.e("\tSPLIT(lo)")
	l.e("\tVPMADDUBSW Z2, Z9, Z12")
	l.e("\tVPMADDUBSW Z3, Z9, Z13")
	l.e("\tSPLIT(hi)")
}

// packQ6KBody writes packQ6KTiles: the coefficients (PACK_Q6K_COEF), then
// per half n of the super-block PACK_Q6K_HALF.
func packQ6KBody(l *lines) {
	l.packOpen("packQ6KTiles", "sb6", 210, "\tMOVQ 104(AX), R9",
		"\tKMOVD R9, K4  // words of valid rows: padding rows keep 0, not the offset")
	l.e("\tQ6K_SCALES_D")
	l.e("\tVMOVUPS Z9, 8192(DI)        // d")
	l.e("\tVMOVUPS Z9, 8256(DI)        // dmin slot: d")
	for h := 0; h < 8; h++ { // 8192+32·sc2h, 8192+32·sc2h+1
		l.e("\tPACK_Q6K_COEF(%d, Z%d, %d)", 896+64*(h%2), 4+h/2, 8320+64*h)
	}
	for n := 0; n < 2; n++ {
		l.e("\tPACK_Q6K_HALF(%d, Z%d, Z%d)", n, 4+2*n, 5+2*n)
	}
	l.packClose("sb6", 210)
}

// packQ6KCoef is PACK_Q6K_COEF(sel, sc, off): the bsum coefficients
// 8192+32·sc of the scale byte pair that sel(DX) picks from sc, as words
// at off.
func packQ6KCoef(l *lines) {
	l.e("\tVPSHUFB sel(DX), sc, Z11")
	l.e("\tVPSRAW $3, Z11, Z11")
	l.e("\tVPADDW Z30, Z11, K4, Z11")
	l.e("\tVMOVDQU32 Z11, off(DI)")
}

// packQ6KHalf is PACK_Q6K_HALF(n, scA, scB): half n of a Q6_K super-block,
// its scales in scA (chunk 2n) and scB (chunk 2n+1): eight k-quads
// (PACK_Q6K_QUAD), the selectors of scale byte kq/4 (+2 for quarters 1, 3).
func packQ6KHalf(l *lines) {
	for kq := 0; kq < 8; kq++ {
		j := kq / 4
		l.e("\tPACK_Q6K_QUAD(n, %d, scA, scB, Z%d, Z%d, Z%d, Z%d)", kq, 17+j, 21+j, 19+j, 23+j)
	}
}

// packQ6KQuad is PACK_Q6K_QUAD(n, kq, scA, scB, se0, so0, se1, so1):
// k-quad kq of half n: the dwords of ql (two) and qh (one) at that offset
// of the 16 rows as four B rows, one per quarter (Q6K_QUARTERq), each times
// its scale (PACK_Q6K_EMIT: quarters 0, 2 by the selectors se0/so0, 1, 3 by
// se1/so1) into its panel rows (kq, kq+8 of chunk 2n, scales scA; of chunk
// 2n+1, scales scB).
func packQ6KQuad(l *lines) {
	l.e("\tGATHER((64*n+4*kq), Z8)")      // ql: quarters 0 (low) and 2 (high)
	l.e("\tGATHER((64*n+32+4*kq), Z9)")   // ql: quarters 1 and 3
	l.e("\tGATHER((128+32*n+4*kq), Z10)") // qh
	l.e("\tQ6K_QUARTER0")
	l.e("\tPACK_Q6K_EMIT(se0, so0, scA, (4096*n+64*kq))")
	l.e("\tQ6K_QUARTER1")
	l.e("\tPACK_Q6K_EMIT(se1, so1, scA, (4096*n+64*kq+512))")
	l.e("\tQ6K_QUARTER2")
	l.e("\tPACK_Q6K_EMIT(se0, so0, scB, (4096*n+64*kq+2048))")
	l.e("\tQ6K_QUARTER3")
	l.e("\tPACK_Q6K_EMIT(se1, so1, scB, (4096*n+64*kq+2560))")
}

// packQ6KEmit is PACK_Q6K_EMIT(se, so, sc, off): the quants in Z11 times
// the scale bytes of sc that se/so select (even/odd), +8192, split into
// panel rows off and off+1024.
func packQ6KEmit(l *lines) {
	l.e("\tVPSHUFB se, sc, Z0")
	l.e("\tVPSHUFB so, sc, Z1")
	l.e("\tVPMADDUBSW Z0, Z11, Z12")
	l.e("\tVPMADDUBSW Z1, Z11, Z13")
	l.e("\tVPADDW Z30, Z12, K4, Z12")
	l.e("\tVPADDW Z30, Z13, K4, Z13")
	l.e("\tSPLIT(off)")
}

const q4kPackDoc = `
// func packQ4KTiles(a *packArgs)
//
// Unpacks rows (mask) of a 16-row tile, nsb Q4_K super-blocks, into the
// panel layout of pack.go. Each lane of a vector is one row: VPGATHERDD
// fetches the same dword of the 16 rows (index = row·rowBytes), which is
// a row of a VNNI B tile already. Low nibbles of quant dword kq' are k-quad
// kq' of the chunk, high nibbles k-quad kq'+8. The scale multiply is
// VPMADDUBSW against (sc,0,sc,0) and (0,sc,0,sc), giving q·sc for the even
// and odd bytes as words, split into 7-bit digits.
//
// Z31 row offsets, Z30 0x3f, Z29 0x0f, Z28 0x30, Z27 0x007f words,
// Z26 0x7f00 words, Z25 0xff00 words, Z17-Z20 even selectors of scale
// byte j, Z21-Z24 odd selectors; at DX+896 and DX+960 the selectors of
// byte pairs (0,1) and (2,3) into words, for the min pairs.
//
// packArgs.next, when not nil, is the next row tile's row 0 at the first
// super-block: each step prefetches that super-block of its 16 rows (R10-R13), as the 16 row streams the gathers read at once defeat the
// hardware prefetchers on cold weights (a short prefill step's unpack).
`

const q5kPackDoc = `
// func packQ5KTiles(a *packArgs)
//
// packQ4KTiles for Q5_K: the same header and panel, each quant joined with
// its fifth bit from qh (bit 2c of qh[l] for the low nibbles of chunk c,
// bit 2c+1 for the high ones) before the scale multiply; q·sc up to 1953,
// so hi digits up to 15. Constants as packQ4KTiles's; Z11 0x10 a byte.
// packArgs.next as packQ4KTiles's.
`

const q6kPackDoc = `
// func packQ6KTiles(a *packArgs)
//
// packQ4KTiles for Q6_K: per half of the super-block, the dwords of ql
// (two) and qh (one) at the same offset make four B rows, one per
// quarter (low/high nibbles, qh bit pairs 0-1, 2-3, 4-5, 6-7). The int8
// scale of each 16 values multiplies by VPMADDUBSW, then +8192 (q6Offset)
// makes the product non-negative for the digit split. The bsum
// coefficients are 8192 + 32·sc as word pairs.
//
// Z31 row offsets, Z30 0x2000 words, Z29 0x0f, Z28 0x30, Z27 0x007f,
// Z26 0x7f00, Z25 0xff00, Z17-Z20 / Z21-Z24 even / odd selectors, Z4-Z7
// the sixteen scales (4 per dword). packArgs.next as packQ4KTiles's.
`

// q4kScalesMinsDoc is what Q4K_SCALES_MINS does.
const q4kScalesMinsDoc = `gathers a Q4_K super-block's 12 scale bytes and d,
// dmin of the 16 rows (one row per dword lane) and unpacks them: the eight
// 6-bit scales into Z4 (0-3) and Z6 (4-7), the mins into Z5 and Z7, d and
// dmin as float32 at dOff and dminOff(DI), and the min pairs (m_2h, m_2h+1)
// as word pairs at coefOff(DI), 64 bytes a pair. Constants as
// packQ4KTiles's.`

// q4kScalesMins emits Q4K_SCALES_MINS at the given panel offsets.
func (l *lines) q4kScalesMins(dOff, dminOff, coefOff int) {
	l.e("\tQ4K_SCALES_MINS(%d, %d, %d)", dOff, dminOff, coefOff)
}

func q4kScalesMinsBody(l *lines) {
	l.gather(4, 0)              // D0
	l.gather(8, 1)              // D1
	l.gather(12, 2)             // D2
	l.gather(0, 3)              // d | dmin<<16
	l.e("\tVPANDD Z30, Z0, Z4") // sc 0-3
	l.e("\tVPANDD Z30, Z1, Z5") // m 0-3
	l.e("\tVPSRLD $2, Z0, Z8")
	l.e("\tVPANDD Z28, Z8, Z8")
	l.e("\tVPANDD Z29, Z2, Z6")
	l.e("\tVPORD  Z8, Z6, Z6") // sc 4-7
	l.e("\tVPSRLD $2, Z1, Z8")
	l.e("\tVPANDD Z28, Z8, Z8")
	l.e("\tVPSRLD $4, Z2, Z7")
	l.e("\tVPANDD Z29, Z7, Z7")
	l.e("\tVPORD  Z8, Z7, Z7") // m 4-7
	l.e("\tVPMOVDW Z3, Y9")
	l.e("\tVCVTPH2PS Y9, Z9")
	l.e("\tVMOVUPS Z9, dOff(DI)")
	l.e("\tVPSRLD $16, Z3, Z10")
	l.e("\tVPMOVDW Z10, Y10")
	l.e("\tVCVTPH2PS Y10, Z10")
	l.e("\tVMOVUPS Z10, dminOff(DI)")
	for h := 0; h < 4; h++ { // (m_2h, m_2h+1)
		src := 5
		if h >= 2 {
			src = 7
		}
		l.e("\tVPSHUFB %d(DX), Z%d, Z11", 896+64*(h%2), src)
		l.e("\tVMOVDQU32 Z11, (coefOff+%d)(DI)", 64*h)
	}
}
