//go:build !noasm

package avx512

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/quant"
)

// TestFloatGemm gates the F16 and BF16 GEMM beside the ledger gate's
// shapes: row and token tails of the 6×4 tile, k over several 2048-value
// passes and k not a multiple of 16 (the matvec's path); and the F16
// matvec over widened activations.
func TestFloatGemm(t *testing.T) {
	for _, f := range []string{"avx512f", "avx512bw", "avx512vl", "f16c"} {
		if !cpufeat.Has(f) {
			t.Skipf("CPU lacks %s", f)
		}
	}
	for _, c := range []struct {
		typ     quant.Type
		variant string
		feature string
	}{{quant.F16, "avx512-gemm", ""}, {quant.BF16, "avx512-gemm", ""}, {quant.BF16, "avx512-bf16-gemm", "avx512bf16"}} {
		if c.feature != "" && !cpufeat.Has(c.feature) {
			t.Logf("CPU lacks %s: %s not checked", c.feature, c.variant)
			continue
		}
		op, _ := ledger.LookupOp(ledger.MatMulOp(c.typ))
		v, ok := ledger.Lookup(op.Name, c.variant)
		if !ok {
			t.Fatalf("%s:%s not registered", op.Name, c.variant)
		}
		for _, s := range []ledger.Shape{{Rows: 1, K: 16, N: 1}, {Rows: 5, K: 48, N: 3}, {Rows: 13, K: 2048 + 32, N: 9}, {Rows: 64, K: 4096 + 2048 + 16, N: 5},
			{Rows: 7, K: 40, N: 6}, {Rows: 24, K: 256, N: 8}, {Rows: 6, K: 64, N: 4}, {Rows: 11, K: 2048 + 64, N: 7}} {
			t.Run(fmt.Sprintf("%s/%s/%s", c.typ, c.variant, s.Key(ledger.KindMatMul)), func(t *testing.T) {
				g, err := gate.NewCase(op, s, 11)
				if err != nil {
					t.Fatal(err)
				}
				if m, err := g.Check(v); err != nil {
					t.Fatalf("%v (metrics %+v)", err, m)
				}
			})
		}
	}
	// The F16 matvec over widened activations: k a multiple of 64 (the
	// assembly) and not (the avx512 matvec's path).
	op, _ := ledger.LookupOp(ledger.MatVecOp(quant.F16))
	v, ok := ledger.Lookup(op.Name, "avx512-x32")
	if !ok {
		t.Fatalf("%s:avx512-x32 not registered", op.Name)
	}
	for _, s := range []ledger.Shape{{Rows: 1, K: 64}, {Rows: 17, K: 128}, {Rows: 3, K: 2048 + 64}, {Rows: 5, K: 96}, {Rows: 9, K: 8192}} {
		t.Run(fmt.Sprintf("matvec/%s", s.Key(ledger.KindMatVec)), func(t *testing.T) {
			c, err := gate.NewCase(op, s, 12)
			if err != nil {
				t.Fatal(err)
			}
			if m, err := c.Check(v); err != nil {
				t.Fatalf("%v (metrics %+v)", err, m)
			}
		})
	}
}
