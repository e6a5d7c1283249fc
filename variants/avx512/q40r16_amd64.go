//go:build !noasm

package avx512

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// q40r16Dot (PREFETCHT0) and q40r16DotN (PREFETCHNTA): groups groups of 16
// interleaved Q4_0 rows, nb blocks each, against one token's activations
// laid out by PrepareQ40R16, every weight line prefetched dist bytes ahead
// when dist > 0 (q40r16_amd64.s).
//
//go:noescape
func q40r16Dot(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q40r16DotN(w, x *byte, dst *float32, nb, groups, dist int)

// q40r16Dot2 reads two groups at once (two weight streams a core, their
// blocks against the same activations): pairs pairs of groups.
//
//go:noescape
func q40r16Dot2(w, x *byte, dst *float32, nb, pairs int)

// q40r16Pairs is q40r16Dot2 over groups groups, a last odd one by q40r16Dot
// (dist unused: no prefetch).
func q40r16Pairs(w, x *byte, dst *float32, nb, groups, _ int) {
	if pairs := groups / 2; pairs > 0 {
		q40r16Dot2(w, x, dst, nb, pairs)
	}
	if groups%2 == 1 {
		q40r16Dot((*byte)(unsafe.Add(unsafe.Pointer(w), (groups-1)*nb*Q40R16Bytes)), x,
			(*float32)(unsafe.Add(unsafe.Pointer(dst), 4*16*(groups-1))), nb, 1, 0)
	}
}

//go:noescape
func gemmPackQ40R16Asm(panel, grp *byte, nb int)

// gemmPackQ40R16A is gemmPackQ40R16 by gemmPackQ40R16Asm (the same bytes,
// TestQ40R16): ≈ 20 instructions a block where the Go loop converts each
// d_w alone, so a short step no longer spends most of its time packing.
func gemmPackQ40R16A(panel, g []byte, nb int) {
	if nb > 0 {
		_ = g[nb*Q40R16Bytes-1]
		_ = panel[nb*gemmPanelBlock-1]
		gemmPackQ40R16Asm(&panel[0], &g[0], nb)
	}
}

// gemmPackQ40R16 writes the panel gemmPackQ40 writes (k-quad j of row r at
// 64j+4r, then 16 float32 d_w) from a 16-row group of the interleaved
// layout (g, nb blocks): line j is k-quads j (low nibbles) and 4+j (high)
// of the 16 rows as they stand.
func gemmPackQ40R16(panel, g []byte, nb int) {
	const lo = 0x0F0F0F0F0F0F0F0F
	for b := range nb {
		src, p := g[b*Q40R16Bytes:][:Q40R16Bytes], panel[b*gemmPanelBlock:][:gemmPanelBlock]
		for j := range 4 {
			line := src[32+64*j:][:64]
			for o := 0; o < 64; o += 8 {
				v := binary.LittleEndian.Uint64(line[o:])
				binary.LittleEndian.PutUint64(p[64*j+o:], v&lo)
				binary.LittleEndian.PutUint64(p[64*(4+j)+o:], v>>4&lo)
			}
		}
		for r := range 16 {
			binary.LittleEndian.PutUint32(p[512+4*r:], math.Float32bits(quant.FP16ToFloat32(binary.LittleEndian.Uint16(src[2*r:]))))
		}
	}
}

func init() {
	feats := []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"}
	const note = "Q4_0 rows interleaved 16 to a 64-byte line (r16blocks.go, 18 bytes a row and block as stored), a line one ZMM of 16 rows: " +
		"nibbles by a word shift and VPANDD, 8 VPDPBUSD a block against the broadcast activation dwords in two int32 chains, less 8·Σx, " +
		"d_w·d_x by one FMA a block and 16 rows (the one-row avx512-vnni kernel pays its widening and float step a row)"
	RegisterR16(R16Family{Name: "avx512-vnni-r16", Family: ledger.FamilyAVX512VNNI, Features: feats}, quant.Q4_0, Q40R16Layout, 32, q40r16Dot, q40r16DotN,
		[]PrefetchForm{{Suffix: "", Dist: 0}, {Suffix: "-pf8k", Dist: 8192}, {Suffix: "-nta8k", Dist: 8192, NTA: true}}, []string{"", "-nta8k"}, note)
	RegisterR16(R16Family{Name: "avx512-vnni-r16-2s", Family: ledger.FamilyAVX512VNNI, Features: feats}, quant.Q4_0, Q40R16Layout, 32, q40r16Pairs, q40r16Pairs,
		[]PrefetchForm{{Suffix: "", Dist: 0}}, []string{""}, note+"; two groups a loop (two weight streams a core, nb·288 bytes apart). "+
			"A loser on Zen 5: engine tg64 0.78× the promoted -nta8k form (1B Q4_0, 8 rounds, run 20261206T012611Z-4a4c07)")
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.Q4_0), Name: "avx512-vnni-gemm-r16", Family: ledger.FamilyAVX512VNNI, Features: feats,
		Layout: Q40R16Layout, Impl: ledger.MatMul(gemmQ40R16.matMul),
		Notes: ledger.MatMulOp(quant.Q4_0) + ":avx512-vnni-gemm over the interleaved layout (the avx512-vnni-r16 matvec's): each 16-row panel written from a group's lines " +
			"(line j is k-quads j and 4+j of the 16 rows as they stand) instead of gathered, so decode and prefill read one copy of the weights; the same panels, so the same bits, as avx512-vnni-gemm; " +
			"the panels written by assembly (four loads, shifts and masks, VCVTPH2PS for the d_w)"})
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.Q4_0), Name: "avx512-vnni-gemm-r16-gopack", Family: ledger.FamilyAVX512VNNI, Features: feats,
		Layout: Q40R16Layout, Impl: ledger.MatMul(gemmQ40R16Go.matMul),
		Notes: ledger.MatMulOp(quant.Q4_0) + ":avx512-vnni-gemm-r16 with its panels written in Go (uint64 masks and shifts, each d_w widened by quant.FP16ToFloat32): " +
			"the shipped form of session 36, a loser to the assembly packer on Zen 5: 1B Q4_0 pp160 0.887×, pp512 0.946× (8 rounds, run 20261206T035233Z-1534e1)"})
}
