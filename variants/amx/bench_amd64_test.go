//go:build !noasm

package amx

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
)

// amxPeakOpsPerCore is the AMX-INT8 rate one Sapphire Rapids core reached
// with a register-resident TDPBSSD loop (6.5–7 TOPS, see issue 8).
const amxPeakOpsPerCore = 6.75e12

// BenchmarkMatMul times the tile program at the prefill shapes of the 1B
// and 3B models (512 tokens) on 1 and 2 threads, reporting GFLOP/s
// (2·rows·n·k per call) and the fraction of the AMX-INT8 peak of as many
// cores as threads. The -repacked variants use weights repacked at load
// (Repack, outside the timing). Select with -bench, e.g.
// 'MatMul/type=Q4_K/variant=amx-int8/.*_3B'.
func BenchmarkMatMul(b *testing.B) {
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
		for _, name := range []string{"amx-int8", "amx-int8-kb2", "amx-int8-kb4", "amx-int8-repacked",
			"avx512-vnni-tiles", "avx512-vnni-tiles-repacked", "amx-bf16-repacked", "avx512-bf16-repacked"} {
			useAMX := strings.HasPrefix(name, "amx-")
			repacked := strings.HasSuffix(name, "-repacked")
			bf16 := strings.Contains(name, "bf16")
			kb := kBlock
			if _, err := fmt.Sscanf(name, "amx-int8-kb%d", &kb); err != nil {
				kb = kBlock
			}
			for _, s := range op.Shapes {
				if !s.Real() {
					continue
				}
				for _, threads := range []int{1, 2} {
					b.Run(fmt.Sprintf("type=%s/variant=%s/shape=%s_%s/threads=%d", typ, name, s.Key(ledger.KindMatMul), s.Model, threads), func(b *testing.B) {
						if useAMX {
							skipUnlessAMX(b)
						} else {
							skipUnlessVNNI(b)
						}
						if bf16 && !cpufeat.Has("avx512bf16") {
							b.Skip("CPU lacks avx512bf16")
						}
						benchShape(b, op, s, threads, useAMX, repacked, bf16, kb)
					})
				}
			}
		}
	}
}

func benchShape(b *testing.B, op *ledger.Op, s ledger.Shape, threads int, useAMX, repacked, bf16 bool, kb int) {
	w, err := workload.New(op, s, 1)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, s.N*s.Rows)
	// Row ranges of whole tiles, one per thread.
	per := (s.Rows/tileRows + threads - 1) / threads * tileRows
	var parts [][2]int
	for r0 := 0; r0 < s.Rows; r0 += per {
		parts = append(parts, [2]int{r0, min(r0+per, s.Rows)})
	}
	var all *Repacked
	var allBF16 *RepackedBF16
	switch {
	case bf16:
		if allBF16, err = RepackBF16(op.Type, w.W, s.Rows, s.K); err != nil {
			b.Fatal(err)
		}
	case repacked:
		if all, err = Repack(op.Type, w.W, s.Rows, s.K); err != nil {
			b.Fatal(err)
		}
	}
	calls := make([]func(), len(parts))
	for i, p := range parts {
		if bf16 {
			r, err := allBF16.Slice(p[0], p[1])
			if err != nil {
				b.Fatal(err)
			}
			calls[i] = func() { r.matMul(useAMX, dst[p[0]:], s.Rows, w.XQ, s.N) }
		} else if repacked {
			r, err := all.Slice(p[0], p[1])
			if err != nil {
				b.Fatal(err)
			}
			calls[i] = func() { r.matMul(useAMX, dst[p[0]:], s.Rows, w.XQ, s.N) }
		} else {
			f := matMul(map[quant.Type]weightFormat{quant.Q4_K: formatQ4K, quant.Q6_K: formatQ6K}[op.Type], program{amx: useAMX, kb: kb})
			rowBytes := len(w.W) / s.Rows
			calls[i] = func() { f(dst[p[0]:], s.Rows, w.W[p[0]*rowBytes:], p[1]-p[0], w.XQ, s.N, s.K) }
		}
	}
	run := func() {
		if len(calls) == 1 {
			calls[0]()
			return
		}
		var wg sync.WaitGroup
		for _, c := range calls {
			wg.Add(1)
			go func() { defer wg.Done(); c() }()
		}
		wg.Wait()
	}
	run()
	b.ResetTimer()
	for b.Loop() {
		run()
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
	// The interleaved layouts' packers (the Intel bundle's prefill): a
	// 16-row group's super-blocks are one straight stream.
	for _, f := range []weightFormat{formatQ4KR16, formatQ6KR16} {
		b.Run(fmt.Sprintf("weights=%s-r16/shape=3072x3072", f.typ), func(b *testing.B) {
			wr := make([]byte, rows*nb*f.blkBytes)
			for b.Loop() {
				for sb0 := 0; sb0 < nb; sb0 += kBlock {
					for r0 := 0; r0 < rows; r0 += tileRows {
						f.pack(panel, wr[r0*nb*f.blkBytes:], tileRows, nb, sb0, min(kBlock, nb-sb0))
					}
				}
			}
			b.ReportMetric(float64(rows*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
		})
	}
	for _, v := range []struct {
		name string
		pack func(pack, xq []byte, j0, j1, n, nb int, sum32 bool)
	}{{"go", packActivationsGo}, {"avx512", packActivations}} {
		b.Run("activations=Q8_K/variant="+v.name+"/shape=3072x512", func(b *testing.B) {
			xq := make([]byte, n*nb*q8kBytes)
			pack := make([]byte, n/pairTokens*nb*aSBBytes)
			for b.Loop() {
				v.pack(pack, xq, 0, n, n, nb, true)
			}
			b.ReportMetric(float64(len(xq))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkTileStep times the kernels alone on one row tile, reporting ns
// per step (16 rows × 32 tokens × one super-block: 16 tile products, 256
// cycles of TDPBSUD at one per 16 cycles) to locate where a step's time
// goes: data in L1 (2 super-blocks × 1 pair), L2 (8 × 16 pairs) or one
// engine call of a short step on a 2048-wide matrix (8 × 1 pair), and
// tileKernelWR without its epilogue (flagNoEpilogue, results wrong) or
// without its products (the VNNI path is not that; products on AMX only).
func BenchmarkTileStep(b *testing.B) {
	skipUnlessAMX(b)
	for _, c := range []struct {
		name       string
		nsb, pairs int
	}{{"l1", 2, 1}, {"l2", 8, 16}, {"call2048", 8, 1}} {
		for _, k := range []struct {
			name   string
			kernel func(*kernelArgs)
			flags  uint64
			wres   bool
		}{
			{"tileKernel", tileKernel, 0, false},
			{"tileKernelWR", tileKernelWR, 0, true},
			{"tileKernelWR-pf", tileKernelWR, flagPrefetch, true},
			{"tileKernelWR-noepilogue", tileKernelWR, flagNoEpilogue, true},
			{"tileKernelIL", tileKernelIL, 0, true},
		} {
			b.Run(fmt.Sprintf("kernel=%s/data=%s", k.name, c.name), func(b *testing.B) {
				n := c.pairs * pairTokens
				panel := aligned(nil, c.nsb*wSBBytes)
				pack := aligned(nil, c.pairs*c.nsb*aSBBytes)
				for i := range panel[:wD] {
					panel[i] = byte(i % 127)
				}
				for i := range pack {
					pack[i] = byte(i % 251)
				}
				accTokens := pairTokens
				if k.wres {
					accTokens = n
				}
				dst := make([]float32, n*tileRows)
				a := kernelArgs{
					w: &panel[0], x: &pack[0], dst: &dst[0], lddBytes: 4 * tileRows, nsb: c.nsb, n: n,
					rowMask: 0xffff, cbuf: (*int32)(unsafe.Pointer(&aligned(nil, 8*tileBytes)[0])),
					acc: (*float32)(unsafe.Pointer(&aligned(nil, accTokens*tileRows*4)[0])),
					cfg: &tileConfig[0], flags: flagAMX | k.flags, pairStride: c.nsb * aSBBytes,
				}
				for b.Loop() {
					k.kernel(&a)
				}
				steps := float64(b.N) * float64(c.nsb*c.pairs)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/steps, "ns/step")
			})
		}
	}
}
