//go:build !noasm

package amx

import (
	"fmt"
	"sync"
	"testing"

	"github.com/damascus-llm/damascus/harness/workload"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/model/quant"
)

// amxPeakOpsPerCore is the AMX-INT8 rate one Sapphire Rapids core reached
// with a register-resident TDPBSSD loop (6.5–7 TOPS, see issue 8).
const amxPeakOpsPerCore = 6.75e12

// parallel splits rows into threads parts of whole 16-row tiles and runs f
// on each concurrently, as the engine's row split does.
func parallel(f ledger.MatMul, threads int, dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int, rowBytes int) {
	if threads == 1 {
		f(dst, ldd, w, rows, xq, n, k)
		return
	}
	per := (rows/tileRows + threads - 1) / threads * tileRows
	var wg sync.WaitGroup
	for r0 := 0; r0 < rows; r0 += per {
		rr := min(per, rows-r0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(dst[r0:], ldd, w[r0*rowBytes:], rr, xq, n, k)
		}()
	}
	wg.Wait()
}

// BenchmarkMatMul times the tile program at the prefill shapes of the 1B
// and 3B models (512 tokens) on 1 and 2 threads, reporting GFLOP/s
// (2·rows·n·k per call) and the fraction of the AMX-INT8 peak of as many
// cores as threads. Select with -bench, e.g. 'MatMul/type=Q4_K/variant=amx-int8/.*3B'.
func BenchmarkMatMul(b *testing.B) {
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		for _, name := range []string{"amx-int8", "avx512-vnni-tiles"} {
			v, _ := ledger.Lookup(op.Name, name)
			for _, s := range op.Shapes {
				if !s.Real() {
					continue
				}
				for _, threads := range []int{1, 2} {
					b.Run(fmt.Sprintf("type=%s/variant=%s/shape=%s_%s/threads=%d", typ, name, s.Key(ledger.KindMatMul), s.Model, threads), func(b *testing.B) {
						if miss := v.Missing(); len(miss) > 0 {
							b.Skipf("needs %v", miss)
						}
						benchShape(b, op, v.Impl.(ledger.MatMul), s, threads)
					})
				}
			}
		}
	}
}

func benchShape(b *testing.B, op *ledger.Op, f ledger.MatMul, s ledger.Shape, threads int) {
	w, err := workload.New(op, s, 1)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, s.N*s.Rows)
	rowBytes := len(w.W) / s.Rows
	parallel(f, threads, dst, s.Rows, w.W, s.Rows, w.XQ, s.N, s.K, rowBytes)
	b.ResetTimer()
	for b.Loop() {
		parallel(f, threads, dst, s.Rows, w.W, s.Rows, w.XQ, s.N, s.K, rowBytes)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	ops := 2 * float64(s.Rows) * float64(s.N) * float64(s.K)
	b.ReportMetric(ops/sec/1e9, "GFLOP/s")
	b.ReportMetric(100*ops/sec/(amxPeakOpsPerCore*float64(threads)), "%AMXpeak")
}

// BenchmarkPack times the per-call unpacking alone: one whole weight matrix
// into row-tile panels, and the activations into the pack.
func BenchmarkPack(b *testing.B) {
	const rows, k, n = 3072, 3072, 512
	nb := k / qk
	w := make([]byte, rows*nb*q4kBytes)
	panel := make([]byte, kBlock*wSBBytes)
	b.Run("weights=Q4_K/shape=3072x3072", func(b *testing.B) {
		for b.Loop() {
			for sb0 := 0; sb0 < nb; sb0 += kBlock {
				for r0 := 0; r0 < rows; r0 += tileRows {
					packQ4KAsm(panel, w[r0*nb*q4kBytes:], tileRows, nb, sb0, min(kBlock, nb-sb0))
				}
			}
		}
		b.ReportMetric(float64(rows*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
	})
	b.Run("activations=Q8_K/shape=3072x512", func(b *testing.B) {
		xq := make([]byte, n*nb*q8kBytes)
		pack := make([]byte, n/pairTokens*nb*aSBBytes)
		for b.Loop() {
			packActivations(pack, xq, n, nb)
		}
	})
}
