//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func f32RowsAVX512(dst *float32, rows int, w, xq *byte, k int)

//go:noescape
func f16RowsAVX512(dst *float32, rows int, w, xq *byte, k int)

//go:noescape
func bf16RowsAVX512(dst *float32, rows int, w, xq *byte, k int)

//go:noescape
func bf16RowsDot(dst *float32, rows int, w, xq *byte, k int)

// Float matrix-vector products: F32 with FMA, F16 widened by VCVTPH2PS, BF16
// widened by a shift, and BF16 through AVX512_BF16's VDPBF16PS.
var (
	MatVecF32     = rowops.FloatMatVec(f32RowsAVX512)
	MatVecF16     = rowops.FloatMatVec(f16RowsAVX512)
	MatVecBF16    = rowops.FloatMatVec(bf16RowsAVX512)
	MatVecBF16Dot = rowops.FloatMatVec(bf16RowsDot)
)

func init() {
	base := []string{"avx512f", "avx512bw", "avx512vl"}
	for _, v := range []struct {
		wt       quant.Type
		name     string
		family   ledger.Family
		f        ledger.MatVec
		features []string
		notes    string
	}{
		{quant.F32, "avx512", ledger.FamilyAVX512, MatVecF32, base, "four 16-lane FMA accumulators, masked tail"},
		{quant.F16, "avx512", ledger.FamilyAVX512, MatVecF16, append(base, "f16c"), "VCVTPH2PS both operands, FMA in float32"},
		{quant.BF16, "avx512", ledger.FamilyAVX512, MatVecBF16, base, "bf16 widened by VPMOVZXWD+VPSLLD, FMA in float32"},
		{quant.BF16, "avx512-bf16", ledger.FamilyAVX512, MatVecBF16Dot, append(base, "avx512bf16"),
			"VDPBF16PS (BYTE-encoded), 32 products per instruction; flushes bf16 denormals"},
	} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(v.wt), Name: v.name, Family: v.family,
			Features: v.features, Impl: v.f, Notes: v.notes})
	}
}
