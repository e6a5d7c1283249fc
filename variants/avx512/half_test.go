//go:build amd64 && !noasm

package avx512

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// TestDequantizeHalf checks both widenings against quant's over
// every length to 70 and odd source offsets, every bit pattern class
// (random bits: NaNs, infinities, subnormals), with guards after dst.
func TestDequantizeHalf(t *testing.T) {
	need(t, "avx512f", "avx512bw", "avx512vl")
	rng := rand.New(rand.NewPCG(1, 2))
	const guard = float32(-3.5)
	for _, c := range []struct {
		name      string
		got, want func(dst []float32, src []byte)
	}{{"f16", DequantizeF16, quant.DequantizeF16}, {"bf16", DequantizeBF16, quant.DequantizeBF16}} {
		for n := 0; n <= 70; n++ {
			for off := range 3 {
				src := make([]byte, off+2*n+8)
				for i := range src {
					src[i] = byte(rng.Uint32())
				}
				binary.LittleEndian.PutUint16(src[off:], 0x3c00) // a plain 1 (f16) / 1.0078125 (bf16 0x3c00)
				dst := make([]float32, n+4)
				for i := range dst {
					dst[i] = guard
				}
				want := make([]float32, n)
				c.want(want, src[off:off+2*n])
				c.got(dst[:n], src[off:off+2*n])
				for i := range n {
					if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d off=%d: [%d] = %#x, want %#x", c.name, n, off, i, math.Float32bits(dst[i]), math.Float32bits(want[i]))
					}
				}
				for i := n; i < len(dst); i++ {
					if dst[i] != guard {
						t.Fatalf("%s n=%d off=%d: wrote past the end at %d", c.name, n, off, i)
					}
				}
			}
		}
	}
}
