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

// packQ6KR16 is packQ6K reading the interleaved Q6_K layout
// (avx512.Q6KR16Layout), as packQ4KR16 reads Q4_K's: a sub-block of the
// layout is four lines, one k-quad of 16 rows each (its nibbles from the
// first or second 64 bytes, its top two bits from the third), so each
// becomes one tile row of digits of sc·q + q6Offset. The panel is
// packQ6K's byte for byte (TestPackQR16).
func packQ6KR16(panel, w []byte, rows, nb, sb0, nsb int) {
	const gb = avx512.Q6KR16Bytes
	for s := range nsb {
		g := w[(sb0+s)*gb:][:gb]
		p := panel[s*wSBBytes:][:wSBBytes]
		for r := range tileRows {
			d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(g[2*r:]))
			putFloat(p[wD+4*r:], d)
			putFloat(p[wDmin+4*r:], d)
			for h := range 8 {
				putCoef(p, h, r, q6Offset+32*int16(int8(g[32+16*(2*h)+r])), q6Offset+32*int16(int8(g[32+16*(2*h+1)+r])))
			}
		}
		for sb := range 16 { // sub-block sb: 16 values from k = 16sb
			sub := g[288+192*sb:][:192]
			for q := range 4 { // k-quad q: nibbles of half q/2, low or high
				nib, top := sub[64*(q/2):][:64], sub[128:][:64]
				for r := range tileRows {
					sc := int(int8(g[32+16*sb+r]))
					for i := range 4 {
						b := nib[4*r+i]
						if q%2 == 1 {
							b >>= 4
						}
						v := sc*int(b&15|(top[4*r+i]>>(2*q)&3)<<4) + q6Offset
						put(p, r, 16*sb+4*q+i, uint16(v&127)|uint16(v>>digitShift)<<8)
					}
				}
			}
		}
	}
}
