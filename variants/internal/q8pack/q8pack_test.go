package q8pack

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// TestPack: each token's quants, offset term and d_x land where the layout
// says, in its token block; the padding tokens stay zero.
func TestPack(t *testing.T) {
	const n, nb = 5, 3
	x := make([]float32, n*nb*32)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	xq := make([]byte, n*nb*q80Bytes)
	if err := quant.Quantize(quant.Q8_0, x, xq); err != nil {
		t.Fatal(err)
	}
	l := Layout{Tokens: 4, BlockBytes: 160, OffsetAt: 128, DAt: 144, Offset: 8}
	act := make([]byte, 2*nb*l.BlockBytes)
	for i := range act {
		act[i] = 0xee
	}
	l.Pack(act, xq, n, nb)
	for tok := range 8 {
		for b := range nb {
			blk := act[((tok/4)*nb+b)*l.BlockBytes:]
			tt := tok % 4
			var wantSum int32
			var wantD float32
			wantQ := make([]byte, 32)
			if tok < n {
				src := xq[(tok*nb+b)*q80Bytes:]
				copy(wantQ, src[2:34])
				for _, q := range wantQ {
					wantSum += int32(int8(q))
				}
				wantD = quant.FP16ToFloat32(binary.LittleEndian.Uint16(src))
			}
			if string(blk[32*tt:32*tt+32]) != string(wantQ) {
				t.Errorf("token %d block %d: quants differ", tok, b)
			}
			if got := int32(binary.LittleEndian.Uint32(blk[128+4*tt:])); got != -8*wantSum {
				t.Errorf("token %d block %d: offset %d, want %d", tok, b, got, -8*wantSum)
			}
			if got := math.Float32frombits(binary.LittleEndian.Uint32(blk[144+4*tt:])); got != wantD {
				t.Errorf("token %d block %d: d %v, want %v", tok, b, got, wantD)
			}
		}
	}
}
