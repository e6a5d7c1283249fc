//go:build !noasm

package amx

import (
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

// The tile programs over the interleaved layout (the r16 decode kernels'):
// the AMX one the lent host's promoted prefill runs, and its VNNI twin,
// which checks the packer end to end where there is no AMX.
func init() {
	const notes = "; the weights in the interleaved layout (avx512.Q4KR16Layout, the r16 matvecs' and avx512-vnni-r16-m4's): each row tile's panel packed from one 16-row group (packQ4KR16Tiles: per line an AND, a shift and two VPMULLWs where the stored packer gathers 16 rows), so decode and prefill can share one copy"
	ledger.Register(tileVariant(formatQ4KR16, program{amx: true, kb: kBlock, interleave: true}, ledger.Variant{Op: ledger.MatMulOp(quant.Q4_K), Name: "amx-int8-il-r16",
		Family: ledger.FamilyFusedDequantAMX, Features: []string{"amx-int8", "avx512f", "avx512bw", "avx512vl", "avx512vnni"}, Layout: avx512.Q4KR16Layout,
		Notes: "amx-int8-il" + notes}))
	ledger.Register(tileVariant(formatQ4KR16, program{kb: kBlock}, ledger.Variant{Op: ledger.MatMulOp(quant.Q4_K), Name: "avx512-vnni-tiles-r16",
		Family: ledger.FamilyAVX512VNNI, Features: vnniFeatures, Layout: avx512.Q4KR16Layout,
		Notes: "avx512-vnni-tiles" + notes}))
	// Q6_K's: the promoted stored program (amx-int8-il-g8) and the K-blocked
	// one, so the lent host can place Q6_K in the layout alone too.
	const q6notes = "; the weights in the interleaved layout (avx512.Q6KR16Layout, the r16 matvecs' and avx512-vnni-r16-m4's): each row tile's panel packed from one 16-row group (packQ6KR16Tiles: per line a VPTERNLOGD joins nibble and top bits, two VPMULLWs by the signed scale and the offset split into digits), so decode and prefill can share one copy"
	ledger.Register(tileVariant(formatQ6KR16, program{amx: true, interleave: true, groupPairs: 8}, ledger.Variant{Op: ledger.MatMulOp(quant.Q6_K), Name: "amx-int8-il-g8-r16",
		Family: ledger.FamilyFusedDequantAMX, Features: []string{"amx-int8", "avx512f", "avx512bw", "avx512vl", "avx512vnni"}, Layout: avx512.Q6KR16Layout,
		Notes: "amx-int8-il-g8" + q6notes}))
	ledger.Register(tileVariant(formatQ6KR16, program{amx: true, kb: kBlock, interleave: true}, ledger.Variant{Op: ledger.MatMulOp(quant.Q6_K), Name: "amx-int8-il-r16",
		Family: ledger.FamilyFusedDequantAMX, Features: []string{"amx-int8", "avx512f", "avx512bw", "avx512vl", "avx512vnni"}, Layout: avx512.Q6KR16Layout,
		Notes: "amx-int8-il" + q6notes}))
	ledger.Register(tileVariant(formatQ6KR16, program{kb: kBlock}, ledger.Variant{Op: ledger.MatMulOp(quant.Q6_K), Name: "avx512-vnni-tiles-r16",
		Family: ledger.FamilyAVX512VNNI, Features: vnniFeatures, Layout: avx512.Q6KR16Layout,
		Notes: "avx512-vnni-tiles" + q6notes}))
}
