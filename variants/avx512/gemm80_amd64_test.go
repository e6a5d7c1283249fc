//go:build !noasm

package avx512

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/ledger/reference"
	"github.com/damascus-llm/damascus/quant"
)

func skipUnlessGemm(t testing.TB) {
	t.Helper()
	for _, f := range []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"} {
		if !cpufeat.Has(f) {
			t.Skipf("CPU lacks %s", f)
		}
	}
}

// TestGemm80 gates the Q8_0 and Q4_0 GEMM over token blocks (n around 12
// and its multiples), row tails and long k, beside the ledger gate's shapes.
func TestGemm80(t *testing.T) {
	skipUnlessGemm(t)
	for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		v, ok := ledger.Lookup(op.Name, "avx512-vnni-gemm")
		if !ok {
			t.Fatalf("%s:avx512-vnni-gemm not registered", op.Name)
		}
		for _, s := range []ledger.Shape{{Rows: 1, K: 32, N: 1}, {Rows: 16, K: 64, N: 12}, {Rows: 17, K: 96, N: 13}, {Rows: 31, K: 256, N: 24},
			{Rows: 48, K: 1024, N: 49}, {Rows: 70, K: 512, N: 11}, {Rows: 16, K: 8192, N: 25}, {Rows: 130, K: 320, N: 130}} {
			t.Run(fmt.Sprintf("%s/%s", typ, s.Key(ledger.KindMatMul)), func(t *testing.T) {
				c, err := gate.NewCase(op, s, 7)
				if err != nil {
					t.Fatal(err)
				}
				if m, err := c.Check(v); err != nil {
					t.Fatalf("%v (metrics %+v)", err, m)
				}
			})
		}
	}
}

// TestGemm80Extremes: weights and activations at their largest and most
// negative codes (Q8_0 −128 included, whose unsigned byte is 0) against the
// float64 reference, relative to Σ|w·x|.
func TestGemm80Extremes(t *testing.T) {
	skipUnlessGemm(t)
	r := ledgertest.NewRand(13)
	q40 := func(nb int, m ledgertest.Mode) []byte {
		out := make([]byte, nb*q40Block)
		for b := 0; b < nb; b++ {
			blk := out[b*q40Block : (b+1)*q40Block]
			switch m {
			case ledgertest.MaxScales:
				for i := range blk[2:] {
					blk[2+i] = 0xff
				}
				binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(65504))
			case ledgertest.MinValues:
				binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(-65504))
			default:
				for i := range blk[2:] {
					blk[2+i] = byte(r.IntN(256))
				}
				binary.LittleEndian.PutUint16(blk, quant.Float32ToFP16(float32(r.Float64()*0.05)))
			}
		}
		return out
	}
	for _, f := range []gemmFormat{gemmQ80, gemmQ40} {
		for _, wm := range []ledgertest.Mode{ledgertest.MaxScales, ledgertest.MinValues, ledgertest.Mixed} {
			for _, xm := range []ledgertest.Mode{ledgertest.MaxScales, ledgertest.MinValues, ledgertest.Mixed} {
				const rows, n, nb = 18, 14, 3
				var w []byte
				if f.typ == quant.Q8_0 {
					w = ledgertest.Q8_0(r, rows*nb, wm)
				} else {
					w = q40(rows*nb, wm)
				}
				xq := ledgertest.Q8_0(r, n*nb, xm)
				ldd := rows + 2
				dst := make([]float32, (n-1)*ldd+rows)
				f.matMul(dst, ldd, w, rows, xq, n, nb*32)
				checkAgainstDot(t, fmt.Sprintf("%s weights %v × activations %v", f.typ, wm, xm), f.typ, dst, ldd, w, rows, xq, n, nb)
			}
		}
	}
}

func checkAgainstDot(t *testing.T, what string, typ quant.Type, dst []float32, ldd int, w []byte, rows int, xq []byte, n, nb int) {
	t.Helper()
	rb := len(w) / rows
	for j := 0; j < n; j++ {
		x, err := reference.Decode(quant.Q8_0, xq[j*nb*q80Block:], nb*32)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < rows; i++ {
			wr, err := reference.Decode(typ, w[i*rb:], nb*32)
			if err != nil {
				t.Fatal(err)
			}
			want := reference.Dot(wr, x)
			var scale float64
			for k := range x {
				scale += math.Abs(wr[k] * x[k])
			}
			if got := float64(dst[j*ldd+i]); math.Abs(got-want) > 1e-5*scale+1e-30 {
				t.Fatalf("%s: out[%d][%d] = %g, want %g (Σ|w·x| %g)", what, j, i, got, want, scale)
			}
		}
	}
}
