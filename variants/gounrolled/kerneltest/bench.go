package kerneltest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/model/quant"
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
