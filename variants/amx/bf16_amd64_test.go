//go:build !noasm

package amx

import (
	"fmt"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/quant"
)

// gateBF16 checks RepackBF16 + MatMul (AMX) or MatMulAVX512 with the gate:
// float64 reference, the matmul thresholds (NMSE ≤ 1e-5), guards, ldd gaps.
// Rounding both weights and activations to bf16 costs NMSE ≈ 3–9e-6 over
// many outputs, inside the threshold, but one dot product alone can land
// far outside it (1×256×1 with Q6_K: 3e-4, cancellation), so shapes with
// fewer than 8 outputs are left out: the NMSE of a handful of outputs
// measures luck, not the kernel.
func gateBF16(t *testing.T, useAMX bool) {
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		mul := (*RepackedBF16).MatMulAVX512
		if useAMX {
			mul = (*RepackedBF16).MatMul
		}
		v := ledger.Variant{Op: op.Name, Name: "bf16", Family: ledger.FamilyAMXBF16, Impl: repackedMatMul(t, typ, RepackBF16, mul)}
		shapes := append([]ledger.Shape(nil), testShapes...)
		if !testing.Short() {
			for _, s := range op.Shapes {
				if s.Real() && s.Rows <= 3072 {
					shapes = append(shapes, gate.GateShape(op, s))
				}
			}
		}
		for _, s := range shapes {
			if s.Rows*s.N < 8 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", typ, s.Key(ledger.KindMatMul)), func(t *testing.T) {
				c := newCase(t, op, s, 17)
				m := mustPass(t, c, v)
				t.Logf("NMSE %.3g max-abs %.3g cosine %.12f", m.NMSE, m.MaxAbs, m.Cosine)
			})
		}
	}
}

func TestBF16AVX512(t *testing.T) {
	for _, f := range []string{"avx512f", "avx512bw", "avx512bf16"} {
		if !cpufeat.Has(f) {
			t.Skipf("CPU lacks %s", f)
		}
	}
	gateBF16(t, false)
}

func TestAMXBF16(t *testing.T) {
	skipUnlessAMX(t)
	if !cpufeat.Has("amx-bf16") {
		t.Skip("AMX not available: CPU lacks AMX-BF16")
	}
	gateBF16(t, true)
}

func TestRepackBF16Errors(t *testing.T) {
	if _, err := RepackBF16(quant.Q4_K, make([]byte, 144), 1, 128); err == nil {
		t.Error("k = 128 accepted")
	}
	if _, err := RepackBF16(quant.Q4_K, make([]byte, 100), 1, 256); err == nil {
		t.Error("short weights accepted")
	}
	r, err := RepackBF16(quant.Q8_0, make([]byte, 17*8*34), 17, 256)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Slice(1, 17); err == nil {
		t.Error("Slice at row 1 succeeded")
	}
}
