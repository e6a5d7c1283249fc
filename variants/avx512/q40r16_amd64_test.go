//go:build !noasm

package avx512

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
)

// TestQ40R16 checks the AVX-512 kernels over the interleaved Q4_0 layout
// beside the gate (which holds them to naive): the GEMM over the layout
// gives avx512-vnni-gemm's bits over the stored rows (the same panels),
// and each batched product gives every token its matvec's bits.
func TestQ40R16(t *testing.T) {
	skipUnlessGemm(t)
	r := ledgertest.NewRand(41)
	for _, s := range []struct{ rows, nb, n int }{{37, 9, 6}, {16, 1, 1}, {48, 64, 13}, {5, 3, 25}} {
		k := 32 * s.nb
		w := ledgertest.Encode(quant.Q4_0, ledgertest.Floats(r, s.rows*k))
		lw := make([]byte, Q40R16Layout.Size(s.rows, k))
		if err := Q40R16Layout.Repack(lw, w, s.rows, k); err != nil {
			t.Fatal(err)
		}
		xq := make([]byte, s.n*s.nb*q80Block)
		for j := range s.n {
			copy(xq[j*s.nb*q80Block:], ledgertest.Q8_0(r, s.nb, ledgertest.Random))
		}
		a, b := make([]float32, s.n*s.rows), make([]float32, s.n*s.rows)
		ledgertest.MustLookup(t, ledger.MatMulOp(quant.Q4_0), "avx512-vnni-gemm-r16").Impl.(ledger.MatMul)(a, s.rows, lw, s.rows, xq, s.n, k)
		ledgertest.MustLookup(t, ledger.MatMulOp(quant.Q4_0), "avx512-vnni-gemm").Impl.(ledger.MatMul)(b, s.rows, w, s.rows, xq, s.n, k)
		what := fmt.Sprintf("%d rows, k %d, %d tokens", s.rows, k, s.n)
		ledgertest.SameBits(t, what+": avx512-vnni-gemm-r16 against avx512-vnni-gemm", a, b)
		clear(a)
		ledgertest.MustLookup(t, ledger.MatMulOp(quant.Q4_0), "avx512-vnni-gemm-r16-gopack").Impl.(ledger.MatMul)(a, s.rows, lw, s.rows, xq, s.n, k)
		ledgertest.SameBits(t, what+": avx512-vnni-gemm-r16-gopack against avx512-vnni-gemm", a, b)
		// The two packers' panels, byte for byte (a group at a time).
		pa, pg := make([]byte, s.nb*gemmPanelBlock), make([]byte, s.nb*gemmPanelBlock)
		for g := 0; g < (s.rows+15)/16; g++ {
			grp := lw[g*s.nb*Q40R16Bytes:][:s.nb*Q40R16Bytes]
			gemmPackQ40R16A(pa, grp, s.nb)
			gemmPackQ40R16(pg, grp, s.nb)
			if !bytes.Equal(pa, pg) {
				t.Fatalf("%s: group %d: the assembly packer's panel differs from the Go packer's", what, g)
			}
		}
		act := Q40R16Layout.ActBytes(k)
		xr := make([]byte, s.n*act)
		Q40R16Layout.PrepareBatch(xr, xq, s.n, k)
		for _, form := range []string{"", "-nta8k"} {
			clear(a)
			ledgertest.MustLookup(t, ledger.MatVecBatchOp(quant.Q4_0), "avx512-vnni-r16"+form).Impl.(ledger.MatMul)(a, s.rows, lw, s.rows, xr, s.n, k)
			mv := ledgertest.MustLookup(t, ledger.MatVecOp(quant.Q4_0), "avx512-vnni-r16"+form).Impl.(ledger.MatVec)
			for j := range s.n {
				mv(b[j*s.rows:][:s.rows], lw, xr[j*act:][:act], k)
			}
			ledgertest.SameBits(t, what+": avx512-vnni-r16"+form+" batched against the matvec", a, b)
		}
	}
}
