package ledgertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

// A Shape is a matvec of Rows×K weights from a real model.
type Shape struct {
	Rows, K int
	Model   string
	Role    string
}

func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.Rows, s.K) }

// Shapes are the decode matvecs of Llama 3.2 1B and 3B (ne1×ne0: output
// rows × row length). The 128256-row output head is left to the ledger: it
// is far larger than a kernel benchmark needs.
var Shapes = []Shape{
	{2048, 2048, "1B", "attn_q/attn_output"},
	{512, 2048, "1B", "attn_k/attn_v"},
	{8192, 2048, "1B", "ffn_gate/ffn_up"},
	{2048, 8192, "1B", "ffn_down"},
	{3072, 3072, "3B", "attn_q/attn_output"},
	{1024, 3072, "3B", "attn_k/attn_v"},
	{8192, 3072, "3B", "ffn_gate/ffn_up"},
	{3072, 8192, "3B", "ffn_down"},
}

// BenchMatVec times f on one shape, single-threaded, and reports the weight
// bytes streamed per second as GB/s.
func BenchMatVec(b *testing.B, wt quant.Type, f MatVecFunc, s Shape) {
	r := NewRand(1)
	w := weights(r, wt, s.Rows, s.K, Random)
	xq := activations(r, wt, s.K, Random)
	dst := make([]float32, s.Rows)
	b.ResetTimer()
	for b.Loop() {
		f(dst, w, xq, s.K)
	}
	b.ReportMetric(float64(len(w))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// TypeName is the lower-case type name benchmarks use: "q4_k".
func TypeName(t quant.Type) string { return strings.ToLower(t.String()) }

// Widths are the vector lengths the fp32 ops and quantizers are benchmarked
// at: the 1B and 3B hidden sizes and the FFN width.
var Widths = []int{2048, 3072, 8192}

// BenchQuantize times an activation quantizer over n values, reporting
// input GB/s.
func BenchQuantize(b *testing.B, typ quant.Type, f QuantizeFunc, n int) {
	x := Floats(NewRand(2), n)
	dst := make([]byte, n/typ.BlockSize()*typ.TypeSize())
	for b.Loop() {
		f(dst, x)
	}
	b.ReportMetric(float64(4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchOps runs the fp32 ops' benchmarks under b, one sub-benchmark per op
// and width, named op=.../variant=.../n=....
func BenchOps(b *testing.B, variant string, rms func(dst, x, w []float32, eps float32),
	silu func(dst, g, u []float32), softmax func(x []float32),
	rope func(x []float32, nHeads, headDim int, cos, sin []float32, neox bool)) {
	r := NewRand(3)
	for _, n := range Widths {
		x, w, y := Floats(r, n), Floats(r, n), make([]float32, n)
		name := fmt.Sprintf("/variant=%s/n=%d", variant, n)
		b.Run("op=rmsnorm"+name, func(b *testing.B) {
			for b.Loop() {
				rms(y, x, w, 1e-5)
			}
		})
		b.Run("op=silu_mul"+name, func(b *testing.B) {
			for b.Loop() {
				silu(y, x, w)
			}
		})
		b.Run("op=softmax"+name, func(b *testing.B) {
			for b.Loop() {
				copy(y, x)
				softmax(y)
			}
		})
		b.Run("op=rope"+name, func(b *testing.B) {
			cos, sin := Floats(r, 64), Floats(r, 64)
			for b.Loop() {
				rope(y, n/128, 128, cos, sin, false)
			}
		})
	}
}
