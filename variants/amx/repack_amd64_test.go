//go:build !noasm

package amx

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// repackedMatMul wraps a repack (Repack, RepackBF16) and the repacked
// product under test (mul: the AMX one or its fallback) as a ledger MatMul
// so the gate can check it (the repack is inside the call here; the engine
// does it once).
func repackedMatMul[R any](t *testing.T, typ quant.Type, repack func(quant.Type, []byte, int, int) (R, error), mul func(R, []float32, int, []byte, int)) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		r, err := repack(typ, w, rows, k)
		if err != nil {
			t.Fatal(err)
		}
		mul(r, dst, ldd, xq, n)
	}
}

// repackedVariant is Repack + MatMul (or MatMulVNNI) as a ledger Variant.
func repackedVariant(t *testing.T, typ quant.Type, useAMX bool) ledger.Variant {
	mul := (*Repacked).MatMulVNNI
	if useAMX {
		mul = (*Repacked).MatMul
	}
	return ledger.Variant{Op: ledger.MatMulOp(typ), Name: "repacked", Family: ledger.FamilyAMXInt8, Impl: repackedMatMul(t, typ, Repack, mul)}
}

func gateRepacked(t *testing.T, useAMX bool) {
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		v := repackedVariant(t, typ, useAMX)
		for _, s := range testShapes {
			t.Run(fmt.Sprintf("%s/%s", typ, s.Key(ledger.KindMatMul)), func(t *testing.T) {
				c := newCase(t, op, s, 13)
				mustPass(t, c, v)
			})
		}
	}
}

func TestRepackedVNNI(t *testing.T) {
	skipUnlessVNNI(t)
	gateRepacked(t, false)
}

func TestRepackedAMX(t *testing.T) {
	skipUnlessAMX(t)
	gateRepacked(t, true)
}

func TestRepackErrors(t *testing.T) {
	for _, c := range []struct {
		typ     quant.Type
		n, rows int
		k       int
	}{
		{quant.Q8_0, 34, 1, 32},   // no tile program
		{quant.Q4_K, 144, 1, 100}, // k not whole super-blocks
		{quant.Q4_K, 143, 1, 256}, // short weights
		{quant.Q6_K, 210, 0, 256}, // no rows
	} {
		if _, err := Repack(c.typ, make([]byte, c.n), c.rows, c.k); err == nil {
			t.Errorf("Repack(%s, %d bytes, %d rows, k=%d) succeeded", c.typ, c.n, c.rows, c.k)
		}
	}
	r, err := Repack(quant.Q4_K, make([]byte, 40*144), 40, 256)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Slice(8, 20); err == nil {
		t.Error("Slice at a row that is not a multiple of 16 succeeded")
	}
	if s, err := r.Slice(32, 40); err != nil || s.Rows != 8 {
		t.Errorf("Slice(32, 40) = %v, %v", s, err)
	}
}
