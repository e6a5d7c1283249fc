package llama

import (
	"fmt"
	"math"
	"os"
	"sync"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
)

// CheckEnv set to 1 has the GPU engine hold every product it runs to the
// CPU's kernel on the same quantized activations, and its quantization of
// them to the CPU's quantizer, one line on stderr a product: a debugging
// aid (each product waits for a copy back), for where the GPU engine and
// the CPU engine part although every kernel passes its gate.
const CheckEnv = "DAMASCUS_CUDA_CHECK"

var checkProducts = os.Getenv(CheckEnv) == "1"

// productCheck sums up what checkProduct found (TestCUDAProductsMatchCPU
// holds it to the CPU's kernels).
var productCheck struct {
	sync.Mutex
	products, byteDiffs int
	worstRel            float64 // max-abs difference over the largest |value|, of the worst product
	worst               string
}

// checkProduct compares the n rows at out (ln's product of b.xq, the
// quantization of the floats at b.act.src) with the CPU's.
func (b *cudaBackend) checkProduct(ln *linear, out cu.Ptr, n int) {
	l := b.l
	k, rows := ln.w.Cols, ln.w.Rows
	rs64, err := quant.RowSize(ln.at, int64(k))
	b.must(err)
	rs := int(rs64)
	xq, src, got := make([]byte, n*rs), make([]float32, n*k), make([]float32, n*rows)
	b.must(cu.DtoHAsync(l.T, xq, b.xq, l.S))
	b.must(cu.DtoHAsync(l.T, src, b.act.src, l.S))
	b.must(cu.DtoHAsync(l.T, got, out, l.S))
	b.must(l.T.Sync(l.S))
	hq := make([]byte, len(xq))
	b.must(quant.Quantize(ln.at, src, hq))
	differ := 0
	for i := range xq {
		if xq[i] != hq[i] {
			differ++
		}
	}
	want := make([]float32, rows)
	var maxAbs, maxWant float64
	worst := -1
	mv := ln.mv
	if ln.layout != nil {
		mv = ln.layout.AsStored(mv)
	}
	for j := range n {
		mv(want, ln.w.Data, xq[j*rs:(j+1)*rs], k)
		for r, w := range want {
			d := math.Abs(float64(got[j*rows+r]) - float64(w))
			maxWant = max(maxWant, math.Abs(float64(w)))
			if d > maxAbs {
				maxAbs, worst = d, j*rows+r
			}
		}
	}
	line := fmt.Sprintf("%s %s n=%d rows=%d k=%d", ln.w.Name, ln.w.Type, n, rows, k)
	productCheck.Lock()
	productCheck.products++
	productCheck.byteDiffs += differ
	if rel := maxAbs / max(maxWant, 1e-30); rel > productCheck.worstRel {
		productCheck.worstRel, productCheck.worst = rel, line
	}
	productCheck.Unlock()
	fmt.Fprintf(os.Stderr, "cuda check %-22s %-5s n=%2d rows=%6d k=%5d: %4d of %6d activation bytes differ from the CPU's quantizer; product max-abs %.3g of max %.3g (row %d, token %d)\n",
		ln.w.Name, ln.w.Type, n, rows, k, differ, len(xq), maxAbs, maxWant, worst%max(rows, 1), worst/max(rows, 1))
}
