package amx

import (
	"encoding/binary"

	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// packQ4KR16 is packQ4K reading the interleaved Q4_K layout
// (avx512.Q4KR16Layout): w is one group of 16 rows, its nb super-blocks
// avx512.Q4KR16Bytes apart; rows past the matrix are the layout's zero
// padding, so they pack to zero as packQ4K's cleared rows do. The panel is
// packQ4K's byte for byte (TestPackQ4KR16). A line of the layout is one
// k-quad of 16 rows, as a tile row is: its low nibbles go to one k-quad of
// the chunk, its high nibbles to another, each as the digits of its row's
// scale times the quant. Go for now: the tile programs' packer from the
// layout in assembly is the next step (an AND, a shift and two VPMULLWs a
// line where the stored packer gathers 16 rows).
func packQ4KR16(panel, w []byte, rows, nb, sb0, nsb int) {
	const gb = avx512.Q4KR16Bytes
	for s := range nsb {
		g := w[(sb0+s)*gb:][:gb]
		p := panel[s*wSBBytes:][:wSBBytes]
		for r := range tileRows {
			putFloat(p[wD+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[2*r:])))
			putFloat(p[wDmin+4*r:], quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[32+2*r:])))
			for c := range chunks {
				putCoef(p, c, r, int16(g[192+32*c+2*r]), int16(g[192+32*c+2*r+1]))
				putCoef(p, c+4, r, 0, 0)
			}
		}
		for sb := range 8 { // sub-block sb: chunk sb/2, its half sb%2
			k0 := (sb/2)*chunkK + (sb%2)*32
			for q := range 4 {
				line := g[320+(sb*4+q)*64:][:64]
				for r := range tileRows {
					dt := &digitTable[g[64+16*sb+r]]
					for i := range 4 {
						b := line[4*r+i]
						put(p, r, k0+4*q+i, dt[b&15])
						put(p, r, k0+16+4*q+i, dt[b>>4])
					}
				}
			}
		}
	}
}
