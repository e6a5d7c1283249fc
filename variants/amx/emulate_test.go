package amx

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/quant"
)

// testShapes cover row tails (not multiples of 16), token tails (odd n,
// one short of and one past a 32-token pair) and k across the K-block
// boundary (9 super-blocks = 8 + 1).
var testShapes = []ledger.Shape{
	{Rows: 1, K: 256, N: 1},
	{Rows: 3, K: 256, N: 3},
	{Rows: 16, K: 512, N: 17},
	{Rows: 17, K: 256, N: 31},
	{Rows: 33, K: 768, N: 32},
	{Rows: 50, K: 256, N: 33},
	{Rows: 31, K: 2304, N: 5},
	{Rows: 64, K: 2304, N: 70},
}

// TestEmulatedTileProgram checks the panel and pack layouts and the digit
// algebra in plain Go against the float64 reference, on any machine.
func TestEmulatedTileProgram(t *testing.T) {
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		for _, s := range testShapes[:6] {
			t.Run(fmt.Sprintf("%s/%s", typ, s.Key(ledger.KindMatMul)), func(t *testing.T) {
				c := newCase(t, op, s, 7)
				v := ledger.Variant{Op: op.Name, Name: "emulated", Family: ledger.FamilyAMXInt8,
					Impl: ledger.MatMul(func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
						emulate(typ, dst, ldd, w, rows, xq, n, k)
					})}
				mustPass(t, c, v)
			})
		}
	}
}

// emulate is the tile program in plain Go, read straight off the panel and
// pack layouts: TDPBSUD as integer loops (signed activation bytes ×
// unsigned digit bytes into int32), then the epilogue in float64. It checks
// the layouts and the digit/bsum algebra independently of the assembly.
func emulate(typ quant.Type, dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
	nb := k / qk
	pack := make([]byte, activationPackBytes(n, nb))
	packActivations(pack, xq, 0, n, n, nb, typ == quant.Q4_K)
	blk, packW := q4kBytes, packQ4K
	if typ == quant.Q6_K {
		blk, packW = q6kBytes, packQ6K
	}
	panel := make([]byte, nb*wSBBytes)
	for r0 := 0; r0 < rows; r0 += tileRows {
		rr := min(tileRows, rows-r0)
		packW(panel, w[r0*nb*blk:], rr, nb, 0, nb)
		for t := 0; t < n; t++ {
			p, tp := t/pairTokens, t%pairTokens
			for r := 0; r < rr; r++ {
				var sum float64
				for sb := 0; sb < nb; sb++ {
					wp := panel[sb*wSBBytes:]
					ap := pack[(p*nb+sb)*aSBBytes:]
					var digit [2]int32
					for c := 0; c < chunks; c++ {
						for x := 0; x < 2; x++ {
							b := wp[wTiles+c*2*tileBytes+x*tileBytes:]
							a := ap[aTiles+c*2*tileBytes+(tp/tileRows)*tileBytes+(tp%tileRows)*chunkK:]
							for kk := 0; kk < chunkK; kk++ {
								digit[x] += int32(int8(a[kk])) * int32(b[(kk/4)*64+r*4+kk%4])
							}
						}
					}
					s := int64(digit[1])<<digitShift + int64(digit[0])
					var m int64
					for h := 0; h < 8; h++ {
						coef := binary.LittleEndian.Uint32(wp[wCoef+h*64+r*4:])
						bs := ap[aBsums+32*tp+4*h:]
						m += int64(int16(coef))*int64(int16(binary.LittleEndian.Uint16(bs))) +
							int64(int16(coef>>16))*int64(int16(binary.LittleEndian.Uint16(bs[2:])))
					}
					d := float64(math.Float32frombits(binary.LittleEndian.Uint32(wp[wD+4*r:])))
					dmin := float64(math.Float32frombits(binary.LittleEndian.Uint32(wp[wDmin+4*r:])))
					dx := float64(math.Float32frombits(binary.LittleEndian.Uint32(ap[aD+4*tp:])))
					if typ == quant.Q6_K {
						sum += dx * d * float64(s-m)
					} else {
						sum += dx * (d*float64(s) - dmin*float64(m))
					}
				}
				dst[t*ldd+r0+r] = float32(sum)
			}
		}
	}
}

// newCase is gate.NewCase, failing the test on an error.
func newCase(t *testing.T, op *ledger.Op, s ledger.Shape, seed uint64) *gate.Case {
	t.Helper()
	c, err := gate.NewCase(op, s, seed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustPass gates v on c, failing the test with the metrics when it does not
// pass; it returns the metrics.
func mustPass(t *testing.T, c *gate.Case, v ledger.Variant) gate.Metrics {
	t.Helper()
	m, err := c.Check(v)
	if err != nil {
		t.Fatalf("%v (metrics %+v)", err, m)
	}
	return m
}
