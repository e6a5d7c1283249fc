//go:build !noasm

package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// TestSubPackAsm compares the sub-block-sum panel packers with the Go ones
// byte for byte, row tails included.
func TestSubPackAsm(t *testing.T) {
	skipUnlessVNNI(t)
	r := ledgertest.NewRand(41)
	for _, c := range []struct {
		f      subFormat
		gen    func(*rand.Rand, int, ledgertest.Mode) []byte
		goPack func(panel, w []byte, rows, nb, sb0, nsb int)
	}{
		{subFormatQ4K, ledgertest.Q4K, subPackQ4KGo},
		{subFormatQ6K, ledgertest.Q6K, subPackQ6KGo},
		{subFormatQ5K, ledgertest.Q5K, subPackQ5KGo},
	} {
		for _, rows := range []int{1, 7, 16} {
			for _, m := range ledgertest.Modes {
				const nb = 3
				w := c.gen(r, rows*nb, m)
				want, got := make([]byte, nb*c.f.sbBytes), poisoned(nb*c.f.sbBytes)
				c.goPack(want, w, rows, nb, 0, nb)
				c.f.pack(got, w, rows, nb)
				samePanels(t, fmt.Sprintf("%s rows %d %v", c.f.typ, rows, m), c.f.sbBytes, got, want)
			}
		}
	}
}

// TestSub gates the sub-block-sum kernel over token tails (n around the
// 12-token block and the 48-token group), row tails and row counts past
// one pass of row tiles, in its registered blocking and in others.
func TestSub(t *testing.T) {
	skipUnlessVNNI(t)
	for _, name := range []string{"avx512-vnni-sub", "avx512-vnni-sub-wres", "avx512-vnni-sub-wres-g16", "avx512-vnni-sub-pf", "avx512-vnni-sub-pf2"} {
		gateAll(t, name)
	}
	shapes := append(testShapes, ledger.Shape{Rows: 48, K: 1024, N: 130}, ledger.Shape{Rows: 70, K: 512, N: 11},
		ledger.Shape{Rows: 80, K: 768, N: 12}, ledger.Shape{Rows: 130, K: 256, N: 49}, ledger.Shape{Rows: 16, K: 8192, N: 24})
	for _, p := range []subProgram{{1, 1, false, false, false}, {2, 3, false, false, false}, {4, 4, false, false, false}, {8, 16, false, false, false},
		{1, 1, true, false, false}, {2, 3, true, false, false}, {4, 16, true, false, false},
		{1, 1, false, true, false}, {4, 4, false, true, true}, {8, 16, true, true, true}} {
		for _, f := range []subFormat{subFormatQ4K, subFormatQ6K, subFormatQ5K} {
			op, _ := ledger.LookupOp(ledger.MatMulOp(f.typ))
			v := ledger.Variant{Op: op.Name, Name: "sub", Family: ledger.FamilyAVX512VNNI, Impl: subMatMul(f, p), Prepared: subPrepared(f, p)}
			for _, s := range shapes {
				t.Run(fmt.Sprintf("%s/%d-%d-%v-%v-%v/%s", f.typ, p.rowTiles, p.groupBlocks, p.wres, p.pf, p.pfFirst, s.Key(ledger.KindMatMul)), func(t *testing.T) {
					c := newCase(t, op, s, 43)
					mustPass(t, c, v)
				})
			}
		}
	}
	for _, w := range []bool{false, true} {
		extremes(t, map[quant.Type]ledger.MatMul{quant.Q4_K: subMatMul(subFormatQ4K, subProgram{4, 4, w, w, w}), quant.Q6_K: subMatMul(subFormatQ6K, subProgram{4, 4, w, w, w}),
			quant.Q5_K: subMatMul(subFormatQ5K, subProgram{4, 4, w, w, w})})
	}
}

// TestSubQ5K gates the registered Q5_K sub-block-sum variants.
func TestSubQ5K(t *testing.T) {
	skipUnlessVNNI(t)
	for _, name := range []string{"avx512-vnni-sub", "avx512-vnni-sub-wres"} {
		gateTypes(t, name, quant.Q5_K)
	}
}

// TestTilesQ5K gates Q5_K's tile programs (the AMX one where AMX runs),
// and the VNNI twin at the extremes of the weights and activations.
func TestTilesQ5K(t *testing.T) {
	skipUnlessVNNI(t)
	gateTypes(t, "avx512-vnni-tiles", quant.Q5_K)
	extremes(t, map[quant.Type]ledger.MatMul{quant.Q5_K: matMul(formatQ5K, program{kb: kBlock})})
	if cpufeat.AMX() == nil {
		gateTypes(t, "amx-int8-il", quant.Q5_K)
		extremes(t, map[quant.Type]ledger.MatMul{quant.Q5_K: matMul(formatQ5K, program{amx: true, kb: kBlock, interleave: true})})
	}
}

// BenchmarkSubKernel times the kernel alone on one row tile with its panel
// and a group of tokens in cache (GMAC/s: 16 rows × n × k per call).
func BenchmarkSubKernel(b *testing.B) {
	skipUnlessVNNI(b)
	r := ledgertest.NewRand(3)
	for _, f := range []subFormat{subFormatQ4K, subFormatQ6K} {
		for _, c := range []struct{ nb, n int }{{8, 48}, {8, 12}, {32, 48}} {
			b.Run(fmt.Sprintf("type=%s/nb=%d/n=%d", f.typ, c.nb, c.n), func(b *testing.B) {
				var w []byte
				if f.typ == quant.Q4_K {
					w = ledgertest.Q4K(r, 16*c.nb, ledgertest.Mixed)
				} else {
					w = ledgertest.Q6K(r, 16*c.nb, ledgertest.Mixed)
				}
				xq := ledgertest.Q8K(r, c.n*c.nb, ledgertest.Mixed)
				panel := aligned(nil, c.nb*f.sbBytes)
				f.pack(panel, w, 16, c.nb)
				pack := aligned(nil, subActivationBytes(c.n, c.nb))
				packSubActivations(pack, xq, 0, c.n, c.n, c.nb, f.sum32)
				acc := aligned(nil, subTokens*64)
				dst := make([]float32, c.n*16)
				a := &subArgs{w: &panel[0], x: &pack[0], dst: &dst[0], lddBytes: 64, nsb: c.nb, n: c.n, rowMask: 0xffff,
					acc: (*float32)(unsafe.Pointer(&acc[0])), blockStride: c.nb * subActBytes}
				for b.Loop() {
					f.kernel(a)
				}
				b.ReportMetric(float64(16*c.n*c.nb*qk)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}

// TestSubR16 checks the sub-block-sum kernel over the interleaved layouts:
// its packers give the stored layout's panel byte for byte (rows past the
// matrix zero in both), and the registered variants pass the gate (their
// prepared forms cut at the layout's groups) with the same results, bit
// for bit, as avx512-vnni-sub over the stored rows.
func TestSubR16(t *testing.T) {
	skipUnlessVNNI(t)
	r := ledgertest.NewRand(43)
	for _, c := range []struct {
		f      subFormat
		lay    *ledger.WeightLayout
		gen    func(*rand.Rand, int, ledgertest.Mode) []byte
		goPack func(panel, w []byte, rows, nb, sb0, nsb int)
	}{
		{subFormatQ4KR16, avx512.Q4KR16Layout, ledgertest.Q4K, subPackQ4KGo},
		{subFormatQ6KR16, avx512.Q6KR16Layout, ledgertest.Q6K, subPackQ6KGo},
	} {
		for _, rows := range []int{1, 7, 16} {
			for _, m := range ledgertest.Modes {
				const nb = 3
				w := c.gen(r, rows*nb, m)
				lw := make([]byte, c.lay.Size(rows, nb*qk))
				if err := c.lay.Repack(lw, w, rows, nb*qk); err != nil {
					t.Fatal(err)
				}
				want, got := make([]byte, nb*c.f.sbBytes), poisoned(nb*c.f.sbBytes)
				c.goPack(want, w, rows, nb, 0, nb)
				c.f.pack(got, lw, rows, nb)
				samePanels(t, fmt.Sprintf("%s rows %d %v", c.f.typ, rows, m), c.f.sbBytes, got, want)
			}
		}
		sameOverLayout(t, c.f.typ, "avx512-vnni-sub-r16", "avx512-vnni-sub", c.lay, 11)
	}
}

// sameOverLayout gates the matmul variant name (over layout lay) and holds
// it to the bits of variant stored over the stored rows, at the test
// shapes and two with row and token tails.
func sameOverLayout(t *testing.T, typ quant.Type, name, storedName string, lay *ledger.WeightLayout, seed uint64) {
	t.Helper()
	op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
	v, ok := ledger.Lookup(op.Name, name)
	if !ok {
		t.Fatalf("%s:%s is not registered", op.Name, name)
	}
	stored, _ := ledger.Lookup(op.Name, storedName)
	for _, s := range append(testShapes, ledger.Shape{Rows: 70, K: 512, N: 11}, ledger.Shape{Rows: 130, K: 256, N: 49}) {
		t.Run(fmt.Sprintf("%s/%s", typ, s.Key(ledger.KindMatMul)), func(t *testing.T) {
			cs := newCase(t, op, s, seed)
			mustPass(t, cs, v)
			lw := make([]byte, lay.Size(s.Rows, s.K))
			if err := lay.Repack(lw, cs.W.W, s.Rows, s.K); err != nil {
				t.Fatal(err)
			}
			a, b := make([]float32, s.N*s.Rows), make([]float32, s.N*s.Rows)
			v.Impl.(ledger.MatMul)(a, s.Rows, lw, s.Rows, cs.W.XQ, s.N, s.K)
			stored.Impl.(ledger.MatMul)(b, s.Rows, cs.W.W, s.Rows, cs.W.XQ, s.N, s.K)
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("output %d: %v over the layout, %v over the stored rows", i, a[i], b[i])
				}
			}
		})
	}
}

// TestPackQR16 checks the tile programs' packers from the interleaved
// layouts against packQ4K and packQ6K over the stored rows, byte for byte
// (row tails and K blocks included; a padding row of Q6_K's layout packs
// as a row of zero scales, the offset's digits, where packQ6K clears it:
// only its d must be zero), and gates the VNNI tile programs over the
// layouts (the AMX ones run the same packers; the lent host gates them).
func TestPackQR16(t *testing.T) {
	skipUnlessVNNI(t)
	r := ledgertest.NewRand(47)
	type packer = func(panel, w []byte, rows, nb, sb0, nsb int)
	for _, c := range []struct {
		typ     quant.Type
		lay     *ledger.WeightLayout
		gen     func(*rand.Rand, int, ledgertest.Mode) []byte
		stored  packer
		packers map[string]packer
	}{
		{quant.Q4_K, avx512.Q4KR16Layout, ledgertest.Q4K, packQ4K, map[string]packer{"go": packQ4KR16, "asm": packQ4KR16Asm}},
		{quant.Q6_K, avx512.Q6KR16Layout, ledgertest.Q6K, packQ6K, map[string]packer{"go": packQ6KR16, "asm": packQ6KR16Asm}},
	} {
		for _, rows := range []int{1, 7, 16} {
			for _, m := range ledgertest.Modes {
				const nb = 5
				w := c.gen(r, rows*nb, m)
				lw := make([]byte, c.lay.Size(rows, nb*qk))
				if err := c.lay.Repack(lw, w, rows, nb*qk); err != nil {
					t.Fatal(err)
				}
				for _, kb := range [][2]int{{0, nb}, {1, 3}, {4, 1}} {
					want := make([]byte, kb[1]*wSBBytes)
					c.stored(want, w, rows, nb, kb[0], kb[1])
					for name, pack := range c.packers {
						got := poisoned(kb[1] * wSBBytes)
						pack(got, lw, rows, nb, kb[0], kb[1])
						for i := range want {
							row := panelRow(i % wSBBytes)
							if row >= rows && c.typ == quant.Q6_K && !(i%wSBBytes >= wD && i%wSBBytes < wDmin+4*tileRows) {
								continue // a padding row's digits and coefficients: its d is zero
							}
							if got[i] != want[i] {
								t.Fatalf("%s %s: rows %d %v, super-blocks %d+%d: panel byte %d (super-block %d offset %d, row %d) = %#x, want %#x", c.typ, name, rows, m, kb[0], kb[1], i, i/wSBBytes, i%wSBBytes, row, got[i], want[i])
							}
						}
					}
				}
			}
		}
		op, _ := ledger.LookupOp(ledger.MatMulOp(c.typ))
		v, ok := ledger.Lookup(op.Name, "avx512-vnni-tiles-r16")
		if !ok {
			t.Fatalf("%s:avx512-vnni-tiles-r16 is not registered", op.Name)
		}
		for _, s := range append(testShapes, ledger.Shape{Rows: 70, K: 512, N: 11}) {
			t.Run(fmt.Sprintf("%s/%s", c.typ, s.Key(ledger.KindMatMul)), func(t *testing.T) { mustPass(t, newCase(t, op, s, 11), v) })
		}
	}
}

// panelRow is the weight row (0..15) whose byte is at offset off of a
// super-block's panel (pack.go's layout).
func panelRow(off int) int {
	switch {
	case off < wD:
		return off % 64 / 4
	case off < wCoef:
		return (off - wD) % (4 * tileRows) / 4
	default:
		return (off - wCoef) % 64 / 4
	}
}

// poisoned is n bytes of 0xA5, which no packer leaves where it writes.
func poisoned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xA5
	}
	return b
}

// samePanels fails the test at the first byte of got that is not want's,
// naming its super-block (sbBytes each) and offset.
func samePanels(t *testing.T, what string, sbBytes int, got, want []byte) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: panel byte %d (super-block %d offset %d) = %#x, want %#x", what, i, i/sbBytes, i%sbBytes, got[i], want[i])
		}
	}
}

// TestSubAVX2 gates avx2-sub over token and row tails, checks that its
// outputs are avx512-vnni-sub's bit for bit (the same integer sums and
// float steps) where that runs, and takes the extremes.
func TestSubAVX2(t *testing.T) {
	if !cpufeat.Has("avx2") || !cpufeat.Has("fma") {
		t.Skip("CPU lacks AVX2 or FMA")
	}
	shapes := append(testShapes, ledger.Shape{Rows: 48, K: 1024, N: 130}, ledger.Shape{Rows: 70, K: 512, N: 11},
		ledger.Shape{Rows: 9, K: 768, N: 13}, ledger.Shape{Rows: 130, K: 256, N: 49})
	fs := map[quant.Type]ledger.MatMul{}
	for _, f := range subAVX2Formats {
		op, _ := ledger.LookupOp(ledger.MatMulOp(f.typ))
		v, ok := ledger.Lookup(op.Name, "avx2-sub")
		if !ok {
			t.Fatalf("%s:avx2-sub not registered", op.Name)
		}
		fs[f.typ] = f.matMul
		ref, hasRef := ledger.Lookup(op.Name, "avx512-vnni-sub")
		for _, s := range shapes {
			t.Run(fmt.Sprintf("%s/%s", f.typ, s.Key(ledger.KindMatMul)), func(t *testing.T) {
				c := newCase(t, op, s, 29)
				mustPass(t, c, v)
				if !hasRef || !ref.Available() {
					return
				}
				w, err := workload.New(op, s, 29)
				if err != nil {
					t.Fatal(err)
				}
				size := (s.N-1)*w.LDD + s.Rows
				got, want := make([]float32, size), make([]float32, size)
				f.matMul(got, w.LDD, w.W, s.Rows, w.XQ, s.N, s.K)
				ref.Impl.(ledger.MatMul)(want, w.LDD, w.W, s.Rows, w.XQ, s.N, s.K)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("out[%d] = %g, avx512-vnni-sub %g: not the same bits", i, got[i], want[i])
					}
				}
			})
		}
	}
	extremes(t, fs)
}

// TestSubAVX2R16 gates avx2-sub-r16 and holds it to its note: over the
// interleaved layout, avx2-sub's results over the stored rows bit for bit.
func TestSubAVX2R16(t *testing.T) {
	if !cpufeat.Has("avx2") || !cpufeat.Has("fma") {
		t.Skip("CPU lacks AVX2 or FMA")
	}
	for _, f := range subAVX2R16Formats {
		sameOverLayout(t, f.typ, "avx2-sub-r16", "avx2-sub", f.layout, 31)
	}
}

// TestSubPackR16Go: the Go packers from the interleaved layouts write the
// panels the reference writes from the stored rows, for full and padded
// groups.
func TestSubPackR16Go(t *testing.T) {
	r := ledgertest.NewRand(47)
	for _, f := range subAVX2R16Formats {
		gen, goPack, sb := ledgertest.Q4K, subPackQ4KGo, subQ4Bytes
		if f.typ == quant.Q6_K {
			gen, goPack, sb = ledgertest.Q6K, subPackQ6KGo, subQ6Bytes
		}
		for _, rows := range []int{1, 7, 16} {
			for _, m := range ledgertest.Modes {
				const nb = 3
				w := gen(r, rows*nb, m)
				lw := make([]byte, f.layout.Size(rows, nb*qk))
				if err := f.layout.Repack(lw, w, rows, nb*qk); err != nil {
					t.Fatal(err)
				}
				want, got := make([]byte, nb*sb), poisoned(nb*sb)
				goPack(want, w, rows, nb, 0, nb)
				f.pack(got, lw, rows, nb)
				samePanels(t, fmt.Sprintf("%s rows %d %v", f.typ, rows, m), sb, got, want)
			}
		}
	}
}

// TestSubPackFast: avx2-sub's dword-at-a-time packers write the reference
// packers' bytes, row tails included.
func TestSubPackFast(t *testing.T) {
	r := ledgertest.NewRand(43)
	for _, f := range subAVX2Formats {
		gen, goPack, sb := ledgertest.Q4K, subPackQ4KGo, subQ4Bytes
		switch f.typ {
		case quant.Q5_K:
			gen, goPack = ledgertest.Q5K, subPackQ5KGo
		case quant.Q6_K:
			gen, goPack, sb = ledgertest.Q6K, subPackQ6KGo, subQ6Bytes
		}
		for _, rows := range []int{1, 7, 16} {
			for _, m := range ledgertest.Modes {
				const nb = 3
				w := gen(r, rows*nb, m)
				want, got := make([]byte, nb*sb), poisoned(nb*sb)
				goPack(want, w, rows, nb, 0, nb)
				f.pack(got, w, rows, nb)
				samePanels(t, fmt.Sprintf("%s rows %d %v", f.typ, rows, m), sb, got, want)
			}
		}
	}
}
