//go:build !noasm

package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/ledger/reference"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
)

func skipUnlessAMX(t testing.TB) {
	t.Helper()
	if err := cpufeat.AMX(); err != nil {
		t.Skipf("AMX not available: %v", err)
	}
}

func skipUnlessVNNI(t testing.TB) {
	t.Helper()
	for _, f := range vnniFeatures {
		if !cpufeat.Has(f) {
			t.Skipf("CPU lacks %s", f)
		}
	}
}

// gateAll runs the gate (float64 reference at sampled outputs, NMSE ≤ 1e-5,
// max-abs ≤ 1e-2 of max|ref|, cosine ≥ 1−1e-5, guards on both sides and in
// the ldd gaps, inputs untouched, no NaN) over testShapes and the real 1B
// and 3B shapes at 16 tokens.
func gateAll(t *testing.T, name string) { gateTypes(t, name, quant.Q4_K, quant.Q6_K) }

// gateTypes gates matmul/<type>:name for each of types at the test shapes
// and, in long mode, the real ones.
func gateTypes(t *testing.T, name string, types ...quant.Type) {
	for _, typ := range types {
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		v, ok := ledger.Lookup(op.Name, name)
		if !ok {
			t.Fatalf("%s:%s not registered", op.Name, name)
		}
		shapes := append([]ledger.Shape(nil), testShapes...)
		if !testing.Short() {
			for _, s := range op.Shapes {
				if s.Real() {
					shapes = append(shapes, gate.GateShape(op, s))
				}
			}
		}
		for _, s := range shapes {
			t.Run(fmt.Sprintf("%s/%s", typ, s.Key(ledger.KindMatMul)), func(t *testing.T) {
				c := newCase(t, op, s, 11)
				m := mustPass(t, c, v)
				t.Logf("NMSE %.3g max-abs %.3g cosine %.12f", m.NMSE, m.MaxAbs, m.Cosine)
			})
		}
	}
}

func TestVNNITiles(t *testing.T) {
	skipUnlessVNNI(t)
	gateAll(t, "avx512-vnni-tiles")
}

func TestAMXInt8(t *testing.T) {
	skipUnlessAMX(t)
	gateAll(t, "amx-int8")
}

func TestAMXInt8KBlocks(t *testing.T) {
	skipUnlessAMX(t)
	gateAll(t, "amx-int8-kb2")
	gateAll(t, "amx-int8-kb4")
}

// TestLag gates the lagged epilogue: through the VNNI products here, on
// AMX where it exists (the control flow is shared, the tile stores not).
func TestLag(t *testing.T) {
	skipUnlessVNNI(t)
	gateAll(t, "avx512-vnni-tiles-lag")
	for _, kb := range []int{1, 2, 4} {
		for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
			f, _ := formatOf(typ)
			op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
			v := ledger.Variant{Op: op.Name, Name: "lag-kb", Family: ledger.FamilyAVX512VNNI, Impl: matMul(f, program{kb: kb, lag: true})}
			for _, s := range testShapes {
				c := newCase(t, op, s, 23)
				if m, err := c.Check(v); err != nil {
					t.Fatalf("%s kb %d %s: %v (metrics %+v)", typ, kb, s.Key(ledger.KindMatMul), err, m)
				}
			}
		}
	}
	if cpufeat.AMX() == nil {
		gateAll(t, "amx-int8-lag")
		gateAll(t, "amx-int8-kb4-lag")
	}
}

// TestKBlocks runs the driver's other K blockings through the VNNI
// products (the AMX kb variants differ from amx-int8 only there).
func TestKBlocks(t *testing.T) {
	skipUnlessVNNI(t)
	for _, kb := range []int{1, 2, 4} {
		for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
			// pfPack: the prefetching packers, whose next tile lies
			// elsewhere in every K block but the whole-row one.
			for _, pf := range []bool{false, true} {
				f, _ := formatOf(typ)
				op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
				v := ledger.Variant{Op: op.Name, Name: "kb", Family: ledger.FamilyAVX512VNNI, Impl: matMul(f, program{kb: kb, pfPack: pf})}
				for _, s := range testShapes[5:] {
					c := newCase(t, op, s, 19)
					if m, err := c.Check(v); err != nil {
						t.Fatalf("%s kb=%d pfPack=%v %s: %v (metrics %+v)", typ, kb, pf, s.Key(ledger.KindMatMul), err, m)
					}
				}
			}
		}
	}
}

// extremes checks the integer paths at their limits: every quant at its
// largest or smallest code, largest scales, activations of ±127 and −128.
// The int32 sums must not overflow; the result must match float64 to float
// rounding.
func extremes(t *testing.T, fs map[quant.Type]ledger.MatMul) {
	r := ledgertest.NewRand(5)
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q5_K} {
		f, ok := fs[typ]
		if !ok {
			continue
		}
		for _, wm := range []ledgertest.Mode{ledgertest.MaxScales, ledgertest.MinValues, ledgertest.Mixed} {
			for _, xm := range []ledgertest.Mode{ledgertest.MaxScales, ledgertest.MinValues, ledgertest.Mixed} {
				const rows, n, nb = 18, 5, 2
				var w []byte
				switch typ {
				case quant.Q4_K:
					w = ledgertest.Q4K(r, rows*nb, wm)
				case quant.Q5_K:
					w = ledgertest.Q5K(r, rows*nb, wm)
				default:
					w = ledgertest.Q6K(r, rows*nb, wm)
				}
				xq := ledgertest.Q8K(r, n*nb, xm)
				ldd := rows + 2
				dst := make([]float32, (n-1)*ldd+rows)
				f(dst, ldd, w, rows, xq, n, nb*qk)
				rb := len(w) / rows
				for j := 0; j < n; j++ {
					x, _ := reference.Decode(quant.Q8_K, xq[j*nb*q8kBytes:], nb*qk)
					for i := 0; i < rows; i++ {
						wr, _ := reference.Decode(typ, w[i*rb:], nb*qk)
						want := reference.Dot(wr, x)
						var scale float64
						for k := range x {
							scale += math.Abs(wr[k] * x[k])
						}
						if got := float64(dst[j*ldd+i]); math.Abs(got-want) > 1e-5*scale+1e-30 {
							t.Fatalf("%s weights %v × activations %v: out[%d][%d] = %g, want %g (Σ|w·x| %g)", typ, wm, xm, j, i, got, want, scale)
						}
					}
				}
			}
		}
	}
}

func TestExtremesVNNI(t *testing.T) {
	skipUnlessVNNI(t)
	extremes(t, map[quant.Type]ledger.MatMul{quant.Q4_K: MatMulQ4KVNNI, quant.Q6_K: MatMulQ6KVNNI})
}

func TestExtremesAMX(t *testing.T) {
	skipUnlessAMX(t)
	extremes(t, map[quant.Type]ledger.MatMul{quant.Q4_K: MatMulQ4K, quant.Q6_K: MatMulQ6K})
}

// TestPackAsm compares the AVX-512 unpackers with the Go ones byte for
// byte, including row tails and a K block that starts past super-block 0.
func TestPackAsm(t *testing.T) {
	skipUnlessVNNI(t)
	r := ledgertest.NewRand(9)
	// The …Pf forms prefetch the tile after (rows 16-31 here) and must
	// leave the same panel.
	pf := func(asm func(panel, w []byte, rows, nb, sb0, nsb int, next *byte), blk int) func(panel, w []byte, rows, nb, sb0, nsb int) {
		return func(panel, w []byte, rows, nb, sb0, nsb int) {
			asm(panel, w, rows, nb, sb0, nsb, &w[(16*nb+sb0)*blk])
		}
	}
	for _, c := range []struct {
		typ     quant.Type
		gen     func(*rand.Rand, int, ledgertest.Mode) []byte
		goPack  func(panel, w []byte, rows, nb, sb0, nsb int)
		asmPack func(panel, w []byte, rows, nb, sb0, nsb int)
	}{
		{quant.Q4_K, ledgertest.Q4K, packQ4K, packQ4KAsm},
		{quant.Q6_K, ledgertest.Q6K, packQ6K, packQ6KAsm},
		{quant.Q4_K, ledgertest.Q4K, packQ4K, pf(packQ4KAsmPf, q4kBytes)},
		{quant.Q6_K, ledgertest.Q6K, packQ6K, pf(packQ6KAsmPf, q6kBytes)},
		{quant.Q5_K, ledgertest.Q5K, packQ5K, packQ5KAsm},
		{quant.Q5_K, ledgertest.Q5K, packQ5K, pf(packQ5KAsmPf, q5kBytes)},
	} {
		for _, rows := range []int{1, 5, 16} {
			for _, m := range ledgertest.Modes {
				const nb, sb0, nsb = 5, 1, 3
				w := c.gen(r, 32*nb, m)
				want := make([]byte, nsb*wSBBytes)
				got := make([]byte, nsb*wSBBytes)
				for i := range got {
					got[i] = 0xA5
				}
				c.goPack(want, w, rows, nb, sb0, nsb)
				c.asmPack(got, w, rows, nb, sb0, nsb)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s rows %d %v: panel byte %d (super-block %d offset %d) = %#x, want %#x", c.typ, rows, m, i, i/wSBBytes, i%wSBBytes, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestWeightResident gates tileKernelWR (super-blocks outside, token pairs
// inside) through the VNNI products here, with and without its prefetching
// epilogue and across K blockings, and on AMX where it exists.
func TestWeightResident(t *testing.T) {
	skipUnlessVNNI(t)
	gateAll(t, "avx512-vnni-tiles-wres")
	for _, kb := range []int{0, 1, 2, 4, 8} {
		for _, pf := range []bool{false, true} {
			for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
				f, _ := formatOf(typ)
				op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
				p := program{kb: kb, wres: true, prefetch: pf}
				if kb == 0 { // all of k, tokens in groups of 2 pairs
					p.groupPairs = 2
				}
				v := ledger.Variant{Op: op.Name, Name: "wres", Family: ledger.FamilyAVX512VNNI, Impl: matMul(f, p)}
				for _, s := range append(testShapes, ledger.Shape{Rows: 48, K: 1024, N: 130}) {
					c := newCase(t, op, s, 29)
					if m, err := c.Check(v); err != nil {
						t.Fatalf("%s kb %d prefetch %v %s: %v (metrics %+v)", typ, kb, pf, s.Key(ledger.KindMatMul), err, m)
					}
				}
			}
		}
	}
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} { // fitL2 both ways: k = 2304 fits, k = 16384 does not
		f, _ := formatOf(typ)
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		v := ledger.Variant{Op: op.Name, Name: "wres-fit", Family: ledger.FamilyAVX512VNNI, Impl: matMul(f, program{kb: 4, wres: true, groupPairs: 2, fitL2: true})}
		for _, s := range []ledger.Shape{{Rows: 20, K: 2304, N: 70}, {Rows: 20, K: 16384, N: 70}} {
			c := newCase(t, op, s, 37)
			if m, err := c.Check(v); err != nil {
				t.Fatalf("%s fitL2 %s: %v (metrics %+v)", typ, s.Key(ledger.KindMatMul), err, m)
			}
		}
	}
	extremes(t, map[quant.Type]ledger.MatMul{
		quant.Q4_K: matMul(formatQ4K, program{kb: kBlock, wres: true, prefetch: true}),
		quant.Q6_K: matMul(formatQ6K, program{kb: kBlock, wres: true, prefetch: true}),
	})
	if cpufeat.AMX() == nil {
		for _, name := range []string{"amx-int8-wres", "amx-int8-wres-kb4", "amx-int8-wres-pf", "amx-int8-wres-g8", "amx-int8-wres-g4", "amx-int8-il", "amx-int8-il-g8", "amx-int8-il-auto", "amx-int8-il-early"} {
			gateAll(t, name)
		}
		extremes(t, map[quant.Type]ledger.MatMul{
			quant.Q4_K: matMul(formatQ4K, program{amx: true, kb: kBlock, wres: true, prefetch: true}),
			quant.Q6_K: matMul(formatQ6K, program{amx: true, kb: kBlock, wres: true, prefetch: true}),
		})
		extremes(t, map[quant.Type]ledger.MatMul{
			quant.Q4_K: matMul(formatQ4K, program{amx: true, kb: kBlock, interleave: true}),
			quant.Q6_K: matMul(formatQ6K, program{amx: true, kb: kBlock, interleave: true}),
		})
		for _, kb := range []int{1, 2, 3} { // one, two and an odd number of steps per pair
			for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
				f, _ := formatOf(typ)
				op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
				v := ledger.Variant{Op: op.Name, Name: "il", Family: ledger.FamilyFusedDequantAMX, Impl: matMul(f, program{amx: true, kb: kb, interleave: true, early: kb != 2})}
				for _, s := range append(testShapes, ledger.Shape{Rows: 48, K: 1024, N: 130}) {
					c := newCase(t, op, s, 31)
					if m, err := c.Check(v); err != nil {
						t.Fatalf("%s kb %d %s: %v (metrics %+v)", typ, kb, s.Key(ledger.KindMatMul), err, m)
					}
				}
			}
		}
	}
}

// TestTilesInside gates the row tiles inside the token groups
// (program.tilesInside) and checks that the loop order alone changes
// nothing: each kernel's results bit for bit, over several row blocks (5
// row tiles: a block of 4 and one of 1, rows not a multiple of 16), K
// blocks (9 super-blocks = 8 + 1) and token groups (700 tokens: three
// groups of the 1 MiB budget at kb 8, a short last one). Through the VNNI
// products everywhere, through AMX (tileKernelIL, the promoted program's
// kernel) where it exists.
func TestTilesInside(t *testing.T) {
	skipUnlessVNNI(t)
	gateAll(t, "avx512-vnni-tiles-ti4")
	pairs := [][2]program{{{kb: kBlock}, {kb: kBlock, tilesInside: 4}}, {{kb: 1}, {kb: 1, tilesInside: 2}}}
	if cpufeat.AMX() == nil {
		gateAll(t, "amx-int8-il-ti4")
		pairs = append(pairs, [2]program{{amx: true, kb: kBlock, interleave: true}, {amx: true, kb: kBlock, interleave: true, tilesInside: 4}},
			[2]program{{amx: true, kb: 3, interleave: true}, {amx: true, kb: 3, interleave: true, tilesInside: 3}})
	}
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		f, _ := formatOf(typ)
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		for _, s := range []ledger.Shape{{Rows: 80, K: 2304, N: 700}, {Rows: 33, K: 768, N: 32}, {Rows: 3, K: 256, N: 3}} {
			w, err := workload.New(op, s, 41)
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range pairs {
				want, got := make([]float32, s.N*s.Rows), make([]float32, s.N*s.Rows)
				matMul(f, pr[0])(want, s.Rows, w.W, s.Rows, w.XQ, s.N, s.K)
				matMul(f, pr[1])(got, s.Rows, w.W, s.Rows, w.XQ, s.N, s.K)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %+v %s: token %d row %d is %v, %+v's %v", typ, pr[1], s.Key(ledger.KindMatMul), i/s.Rows, i%s.Rows, got[i], pr[0], want[i])
					}
				}
			}
		}
	}
}
