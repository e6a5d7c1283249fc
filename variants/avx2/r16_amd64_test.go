//go:build amd64 && !noasm

package avx2

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// TestR16SameBitsAsAVX512 holds the AVX2 interleaved kernels to their
// notes' claim: the integer sums and float steps of avx512-vnni-r16, so
// the same bits, for every row of full and partial groups, each prefetch
// form and the batched product. It needs both kernels' features (an
// AVX-512 VNNI machine); the conformance suite gates them everywhere.
func TestR16SameBitsAsAVX512(t *testing.T) {
	for _, f := range []string{"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni"} {
		if !cpufeat.Has(f) {
			t.Skipf("needs %s to run the AVX-512 kernel beside the AVX2 one", f)
		}
	}
	r := ledgertest.NewRand(35)
	for _, c := range []struct {
		typ quant.Type
		gen func(*rand.Rand, int, ledgertest.Mode) []byte
	}{{quant.Q4_K, ledgertest.Q4K}, {quant.Q6_K, ledgertest.Q6K}} {
		for _, variant := range []string{"avx2-r16", "avx2-r16-pf4k", "avx2-r16-nta8k"} {
			mine := ledgertest.MustLookup(t, ledger.MatVecOp(c.typ), variant)
			ref := ledgertest.MustLookup(t, ledger.MatVecOp(c.typ), "avx512-vnni-r16")
			for _, rows := range []int{16, 37, 64} {
				for _, m := range ledgertest.Modes {
					const nb = 5
					k := nb * quant.QK_K
					lay := mine.Layout
					w := c.gen(r, rows*nb, m)
					lw := make([]byte, lay.Size(rows, k))
					if err := lay.Repack(lw, w, rows, k); err != nil {
						t.Fatal(err)
					}
					xr := make([]byte, lay.ActBytes(k))
					lay.Prepare(xr, ledgertest.Q8K(r, nb, m), k)
					got, want := make([]float32, rows), make([]float32, rows)
					mine.Impl.(ledger.MatVec)(got, lw, xr, k)
					ref.Impl.(ledger.MatVec)(want, lw, xr, k)
					ledgertest.SameBits(t, fmt.Sprintf("%s:%s rows %d %v", mine.Op, variant, rows, m), got, want)
				}
			}
		}
		batch := ledgertest.MustLookup(t, ledger.MatVecBatchOp(c.typ), "avx2-r16")
		one := ledgertest.MustLookup(t, ledger.MatVecOp(c.typ), "avx512-vnni-r16")
		const rows, nb, n = 4100, 2, 3 // more than one 128 KiB block of rows, a partial group
		k := nb * quant.QK_K
		lay := batch.Layout
		lw := make([]byte, lay.Size(rows, k))
		if err := lay.Repack(lw, c.gen(r, rows*nb, ledgertest.Random), rows, k); err != nil {
			t.Fatal(err)
		}
		xr := make([]byte, n*lay.ActBytes(k))
		for j := range n {
			lay.Prepare(xr[j*lay.ActBytes(k):], ledgertest.Q8K(r, nb, ledgertest.Random), k)
		}
		got := make([]float32, n*rows)
		batch.Impl.(ledger.MatMul)(got, rows, lw, rows, xr, n, k)
		for j := range n {
			want := make([]float32, rows)
			one.Impl.(ledger.MatVec)(want, lw, xr[j*lay.ActBytes(k):][:lay.ActBytes(k)], k)
			ledgertest.SameBits(t, fmt.Sprintf("%s:avx2-r16 token %d", batch.Op, j), got[j*rows:][:rows], want)
		}
	}
}

// TestBlocksR16 checks the interleaved Q4_0 and Q8_0 layouts and their
// kernels: a row expanded from the layout is the stored row's expansion,
// the GEMM over it gives avx2-gemm's bits over the stored rows, and the
// batched product gives each token the matvec's bits (the conformance
// suite gates them all against naive).
func TestBlocksR16(t *testing.T) {
	r := ledgertest.NewRand(40)
	const rows, nb, n = 37, 9, 6
	k := 32 * nb
	for _, c := range []struct {
		typ quant.Type
		lay *ledger.WeightLayout
		bs  int
	}{{quant.Q4_0, avx512.Q40R16Layout, q40Bytes}, {quant.Q8_0, avx512.Q80R16Layout, q80Bytes}} {
		w := ledgertest.Encode(c.typ, ledgertest.Floats(r, rows*k))
		lw := make([]byte, c.lay.Size(rows, k))
		if err := c.lay.Repack(lw, w, rows, k); err != nil {
			t.Fatal(err)
		}
		got, want := make([]float32, k), make([]float32, k)
		for row := range rows {
			c.lay.DequantizeRow(got, lw, row, k)
			if err := quant.Dequantize(c.typ, w[row*nb*c.bs:][:nb*c.bs], want); err != nil {
				t.Fatal(err)
			}
			ledgertest.SameBits(t, fmt.Sprintf("%s row %d expanded", c.typ, row), got, want)
		}
		if err := c.lay.Repack(lw, w, rows, k+32); err == nil {
			t.Errorf("%s: a repack with too few stored bytes was accepted", c.typ)
		}
		if !cpufeat.Has("avx2") || !cpufeat.Has("fma") || !cpufeat.Has("f16c") {
			continue // the kernels need them
		}
		xq := make([]byte, n*nb*q80Bytes)
		for j := range n {
			copy(xq[j*nb*q80Bytes:], ledgertest.Q8_0(r, nb, ledgertest.Random))
		}
		a, b := make([]float32, n*rows), make([]float32, n*rows)
		ledgertest.MustLookup(t, ledger.MatMulOp(c.typ), "avx2-gemm-r16").Impl.(ledger.MatMul)(a, rows, lw, rows, xq, n, k)
		ledgertest.MustLookup(t, ledger.MatMulOp(c.typ), "avx2-gemm").Impl.(ledger.MatMul)(b, rows, w, rows, xq, n, k)
		ledgertest.SameBits(t, fmt.Sprintf("%s avx2-gemm-r16 against avx2-gemm", c.typ), a, b)
		if c.typ == quant.Q4_0 {
			clear(a)
			ledgertest.MustLookup(t, ledger.MatMulOp(c.typ), "avx2-gemm-r16-gopack").Impl.(ledger.MatMul)(a, rows, lw, rows, xq, n, k)
			ledgertest.SameBits(t, "Q4_0 avx2-gemm-r16-gopack against avx2-gemm", a, b)
			// The two packers' panels, byte for byte, each half of each group.
			pa, pg := make([]byte, nb*gemm2Panel), make([]byte, nb*gemm2Panel)
			for g := 0; g < (rows+15)/16; g++ {
				for h := range 2 {
					grp := lw[g*nb*avx512.Q40R16Bytes:][:nb*avx512.Q40R16Bytes]
					packGemm2Q40R16A(pa, grp, h, nb)
					packGemm2Q40R16(pg, grp, h, nb)
					if !bytes.Equal(pa, pg) {
						t.Fatalf("Q4_0 group %d half %d: the assembly packer's panel differs from the Go packer's", g, h)
					}
				}
			}
		}
		xr := make([]byte, n*c.lay.ActBytes(k))
		c.lay.PrepareBatch(xr, xq, n, k)
		ledgertest.MustLookup(t, ledger.MatVecBatchOp(c.typ), "avx2-r16-nta8k").Impl.(ledger.MatMul)(a, rows, lw, rows, xr, n, k)
		mv := ledgertest.MustLookup(t, ledger.MatVecOp(c.typ), "avx2-r16-nta8k").Impl.(ledger.MatVec)
		for j := range n {
			mv(b[j*rows:][:rows], lw, xr[j*c.lay.ActBytes(k):][:c.lay.ActBytes(k)], k)
		}
		ledgertest.SameBits(t, fmt.Sprintf("%s: the batched product against the matvec", c.typ), a, b)
	}
}
