//go:build !noasm

package amx

import (
	"fmt"
	"maps"
	"slices"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// formatQ4KR16 is the tile programs' Q4_K format over the interleaved
// layout: blkBytes is its bytes a row and super-block, so a row tile's
// offset is its group's.
var formatQ4KR16 = weightFormat{typ: quant.Q4_K, blkBytes: avx512.Q4KR16Bytes / avx512.Q4KR16Rows, pack: packQ4KR16Asm,
	packPf: func(panel, w []byte, rows, nb, sb0, nsb int, _ *byte) { packQ4KR16Asm(panel, w, rows, nb, sb0, nsb) }, sum32: true}

// formatQ6KR16 is formatQ4KR16 for the interleaved Q6_K layout.
var formatQ6KR16 = weightFormat{typ: quant.Q6_K, blkBytes: avx512.Q6KR16Bytes / avx512.Q4KR16Rows, pack: packQ6KR16Asm,
	packPf: func(panel, w []byte, rows, nb, sb0, nsb int, _ *byte) { packQ6KR16Asm(panel, w, rows, nb, sb0, nsb) }, flags: flagIntMin}

// packQ4KR16Tiles is packQ4KR16's assembly (packr16_amd64.s): n
// super-blocks of the group at w into panel.
//
//go:noescape
func packQ4KR16Tiles(panel, w *byte, n int)

// packQ4KR16Asm is packQ4KR16 through packQ4KR16Tiles.
var packQ4KR16Asm = r16Packer(packQ4KR16Tiles, avx512.Q4KR16Bytes)

// r16Packer is a tile packer of super-blocks sb0 to sb0+nsb of one group
// (groupBytes a super-block) through its assembly, tiles.
func r16Packer(tiles func(panel, w *byte, n int), groupBytes int) func(panel, w []byte, rows, nb, sb0, nsb int) {
	return func(panel, w []byte, rows, nb, sb0, nsb int) {
		if nsb > 0 {
			tiles(&panel[0], &w[sb0*groupBytes], nsb)
		}
	}
}

// packQ6KR16Tiles is packQ6KR16's assembly (packr16_amd64.s): n
// super-blocks of the group at w into panel.
//
//go:noescape
func packQ6KR16Tiles(panel, w *byte, n int)

// packQ6KR16Asm is packQ6KR16 through packQ6KR16Tiles.
var packQ6KR16Asm = r16Packer(packQ6KR16Tiles, avx512.Q6KR16Bytes)

// The tile programs over the interleaved layouts (the r16 decode
// kernels'), so decode and prefill can share one copy: for each weight type
// the AMX programs its promoted stored twins run, and the VNNI twin, which
// checks the packer end to end where there is no AMX.
func init() {
	for _, t := range []struct {
		f      weightFormat
		lay    *ledger.WeightLayout
		packer string
		amx    map[string]program // name → program, AMX
	}{
		{formatQ4KR16, avx512.Q4KR16Layout, "packQ4KR16Tiles: per line an AND, a shift and two VPMULLWs where the stored packer gathers 16 rows",
			map[string]program{"amx-int8-il": {amx: true, kb: kBlock, interleave: true}, "amx-int8-il-ti4": {amx: true, kb: kBlock, interleave: true, tilesInside: 4},
				"amx-int8-il-ti8": {amx: true, kb: kBlock, interleave: true, tilesInside: 8}}},
		{formatQ6KR16, avx512.Q6KR16Layout, "packQ6KR16Tiles: per line a VPTERNLOGD joins nibble and top bits, two VPMULLWs by the signed scale and the offset split into digits",
			map[string]program{"amx-int8-il": {amx: true, kb: kBlock, interleave: true}, "amx-int8-il-g8": {amx: true, interleave: true, groupPairs: 8},
				"amx-int8-il-ti4": {amx: true, kb: kBlock, interleave: true, tilesInside: 4}, "amx-int8-il-ti8": {amx: true, kb: kBlock, interleave: true, tilesInside: 8}}},
	} {
		op := ledger.MatMulOp(t.f.typ)
		notes := fmt.Sprintf("; the weights in the interleaved layout (%s, the r16 matvecs' and avx512-vnni-r16-m4's): each row tile's panel packed from one 16-row group (%s)", t.lay.Name, t.packer)
		for _, name := range slices.Sorted(maps.Keys(t.amx)) {
			ledger.Register(tileVariant(t.f, t.amx[name], ledger.Variant{Op: op, Name: name + "-r16", Family: ledger.FamilyFusedDequantAMX,
				Features: amxFeatures, Layout: t.lay, Notes: name + notes}))
		}
		ledger.Register(tileVariant(t.f, program{kb: kBlock}, ledger.Variant{Op: op, Name: "avx512-vnni-tiles-r16", Family: ledger.FamilyAVX512VNNI,
			Features: vnniFeatures, Layout: t.lay, Notes: "avx512-vnni-tiles" + notes}))
	}
}
