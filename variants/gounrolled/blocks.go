package gounrolled

import (
	"encoding/binary"
	"math"
)

// Block geometry (bytes), from ggml-common.h.
const (
	qk         = 256 // values per K-quant super-block
	q4KBytes   = 144 // d, dmin fp16; scales[12]; qs[128]
	q6KBytes   = 210 // ql[128]; qh[64]; scales[16] int8; d fp16
	q8KBytes   = 292 // d float32; qs[256] int8; bsums[16] int16
	q80Values  = 32
	q80Bytes   = 34 // d fp16; qs[32] int8
	q8KQsOff   = 4
	q8KSumsOff = 260
)

func half(b []byte) float32 { return FP16ToFloat32(binary.LittleEndian.Uint16(b)) }

func bf16(b []byte) float32 { return BF16ToFloat32(binary.LittleEndian.Uint16(b)) }

func f32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// Q4KScales unpacks the 6-bit scales and mins of a Q4_K block's 12 scale
// bytes (ggml's get_scale_min_k4): sub-block j has scale sc[j] and min m[j].
func Q4KScales(s []byte) (sc, m [8]uint8) {
	_ = s[11]
	for j := 0; j < 4; j++ {
		sc[j] = s[j] & 63
		m[j] = s[j+4] & 63
	}
	for j := 4; j < 8; j++ {
		sc[j] = s[j+4]&0xf | (s[j-4]>>6)<<4
		m[j] = s[j+4]>>4 | (s[j]>>6)<<4
	}
	return sc, m
}
