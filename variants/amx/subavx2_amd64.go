//go:build !noasm

package amx

import (
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// The sub-block-sum GEMM on AVX2 (avx2-sub; subavx2_amd64.s) for CPUs
// without AVX-512, whose prefill otherwise loops the AVX2 matvec over the
// tokens. Same panels, activation pack and arithmetic as avx512-vnni-sub
// (the same bits); the panels are written in Go a dword at a time
// (subPackK4Fast, subPackQ6KFast), as these CPUs have no 512-bit gathers.
//
// Promoted below the AVX-512 kernels (1.3–2.2× the looped AVX2 matvec at
// the 1B and 3B shapes with AVX-512 hidden, run 20261205T175733Z-fb6053).
// Its agreement failure of session 33 (the tiny Q4_K_M's rounded-activation
// oracle at layer 1, cosine 0.99999057) was the reference rounding a value
// exactly on a tie, which this order of sums — and AVX-512's decode matvec
// at one token a batch — rounds the other way by an ulp: CompareLayers now
// stops at such ties (model/llama/compare.go).

type subAVX2Args struct {
	w, x *byte
	out  *[32]float32
	nsb  int
	tok0 int
}

//go:noescape
func subAVX2Q4K(a *subAVX2Args)

//go:noescape
func subAVX2Q5K(a *subAVX2Args)

//go:noescape
func subAVX2Q6K(a *subAVX2Args)

// subAVX2Format is a weight type of avx2-sub: its block bytes, its Go
// packer, its panel bytes a super-block, its kernel and whether its block
// sums are of 32 values.
type subAVX2Format struct {
	typ      quant.Type
	blkBytes int
	pack     func(panel, w []byte, rows, nb int) // all nb super-blocks of rows rows
	sbBytes  int
	kernel   func(*subAVX2Args)
	sum32    bool
	// layout is the weight layout w is in (nil: as stored); blkBytes is
	// then its bytes a row and super-block, and pack reads one group.
	layout *ledger.WeightLayout
}

var subAVX2Formats = []subAVX2Format{
	{quant.Q4_K, q4kBytes, func(p, w []byte, rows, nb int) { subPackK4Fast(p, w, rows, nb, q4kBytes, false) }, subQ4Bytes, subAVX2Q4K, true, nil},
	{quant.Q5_K, q5kBytes, func(p, w []byte, rows, nb int) { subPackK4Fast(p, w, rows, nb, q5kBytes, true) }, subQ4Bytes, subAVX2Q5K, true, nil},
	{quant.Q6_K, q6kBytes, subPackQ6KFast, subQ6Bytes, subAVX2Q6K, false, nil},
}

// subAVX2R16Formats are avx2-sub over the interleaved layouts (the
// avx2-r16 decode kernels'), so a CPU without AVX-512 holds one copy of
// the weights: a group's panel is written from its lines in Go
// (subPackQ4KR16Go, subPackQ6KR16Go).
var subAVX2R16Formats = []subAVX2Format{
	{quant.Q4_K, avx512.Q4KR16Bytes / avx512.Q4KR16Rows, func(p, w []byte, _, nb int) { subPackQ4KR16Go(p, w, nb) }, subQ4Bytes, subAVX2Q4K, true, avx512.Q4KR16Layout},
	{quant.Q6_K, avx512.Q6KR16Bytes / avx512.Q4KR16Rows, func(p, w []byte, _, nb int) { subPackQ6KR16Go(p, w, nb) }, subQ6Bytes, subAVX2Q6K, false, avx512.Q6KR16Layout},
}

// matMul is the format's GEMM (ledger.MatMul contract).
func (f subAVX2Format) matMul(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
	if rows <= 0 || n <= 0 {
		return
	}
	nb := k / qk
	if need := (n-1)*ldd + rows; len(dst) < need || ldd < rows || k%qk != 0 || len(w) < rows*nb*f.blkBytes || len(xq) < n*nb*q8kBytes {
		panic(fmt.Sprintf("amx %s avx2-sub: bad operands: len(dst)=%d ldd=%d rows=%d n=%d k=%d len(w)=%d len(xq)=%d",
			f.typ, len(dst), ldd, rows, n, k, len(w), len(xq)))
	}
	if nb == 0 {
		for j := 0; j < n; j++ {
			clear(dst[j*ldd : j*ldd+rows])
		}
		return
	}
	s := getScratch()
	defer putScratch(s)
	s.pack = aligned(s.pack, subActivationBytes(n, nb))
	packSubActivations(s.pack, xq, 0, n, n, nb, f.sum32)
	s.panel = aligned(s.panel, nb*f.sbBytes)
	out := &s.avx2Out
	blockStride := nb * subActBytes
	for r0 := 0; r0 < rows; r0 += tileRows {
		rr := min(tileRows, rows-r0)
		f.pack(s.panel, w[r0*nb*f.blkBytes:], rr, nb)
		for h := 0; h < 2 && 8*h < rr; h++ {
			hr := min(8, rr-8*h)
			for t0 := 0; t0 < n; t0 += 4 {
				a := &s.avx2
				*a = subAVX2Args{w: &s.panel[32*h], x: &s.pack[(t0/subTokens)*blockStride], out: out, nsb: nb, tok0: t0 % subTokens}
				f.kernel(a)
				for t := 0; t < min(4, n-t0); t++ {
					copy(dst[(t0+t)*ldd+r0+8*h:][:hr], out[8*t:8*t+hr])
				}
			}
		}
	}
}

func init() {
	for _, f := range subAVX2R16Formats {
		ledger.Register(ledger.Variant{Op: ledger.MatMulOp(f.typ), Name: "avx2-sub-r16", Family: ledger.FamilyAVX2, Features: []string{"avx2", "fma"},
			Layout: f.layout, Impl: ledger.MatMul(f.matMul),
			Notes: ledger.MatMulOp(f.typ) + ":avx2-sub over the interleaved layout (the avx2-r16 matvecs'), for CPUs without AVX-512: " +
				"each 16-row tile's panel written in Go from one group's lines (a line's nibbles are two k-quads; Q6_K's quads joined with their top bits), " +
				"so decode and prefill read one copy of the weights; the same panels, so the same bits, as avx2-sub"})
	}
	for _, f := range subAVX2Formats {
		ledger.Register(ledger.Variant{Op: ledger.MatMulOp(f.typ), Name: "avx2-sub", Family: ledger.FamilyAVX2, Features: []string{"avx2", "fma"},
			Impl: ledger.MatMul(f.matMul),
			Notes: "avx512-vnni-sub's GEMM in 256-bit AVX2, for CPUs without AVX-512: its panels (written in Go a dword at a time) and activation pack, " +
				"per k-quad VPMADDUBSW of the raw quants × the Q8_K activations, added in words over as many k-quads as stay below 2^15 (Q4_K 8, Q5_K 4, Q6_K 2), then VPMADDWD by ones (the same exact int32 sums), VPMULLD by the scale, " +
				"block sums by VPMADDWD, d·dx in its order (the same bits); 8 rows × 4 tokens a call"})
	}
}
