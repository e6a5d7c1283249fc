//go:build !noasm

package amx

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
	"golang.org/x/sys/unix"
)

// BenchmarkStepLadder splits the prefill tile program's step (16 rows × 32
// tokens × one super-block) at the 3B shapes, 512 tokens, into rungs that
// each add one cost of the engine's call (issue 19: ≈ 490 ns a step in the
// engine against ≈ 200 in BenchmarkTileStep's L2 case):
//
//   - hot: runPacked over the real shape, every row tile given the same
//     panel (weights in L1/L2), the activation pack made outside the timing
//     (it streams as in the engine);
//   - cold: each row tile's own panel, all unpacked outside the timing (the
//     digit panels, 2 bytes a weight, stream from memory);
//   - unpack: the prepared form's Run, the panels unpacked per call from the
//     stored rows (the engine's path after the batch's one activation pack);
//   - matmul: the one-step MatMul, the activation pack inside the timing;
//   - hot-2t, unpack-2t: hot and unpack on two goroutines, half the row
//     tiles each (ns a step of each thread): what two cores cost each other.
//
// On AMX the programs are the promoted amx-int8-il over the interleaved
// layout (the Intel bundle's -r16) and the stored one, then -kb4, -g8 and
// amx-int8-wres over the interleaved one; elsewhere the VNNI twin
// avx512-vnni-tiles-wres, so the harness runs on any AVX-512 VNNI CPU.
func BenchmarkStepLadder(b *testing.B) {
	progs := []struct {
		name string
		p    program
	}{{"vnni-wres", program{kb: kBlock, wres: true}}}
	if cpufeat.AMX() == nil {
		progs = []struct {
			name string
			p    program
		}{
			{"amx-il", program{amx: true, kb: kBlock, interleave: true}},
			{"amx-il-kb4", program{amx: true, kb: 4, interleave: true}},
			{"amx-il-g8", program{amx: true, interleave: true, groupPairs: 8}},
			{"amx-wres", program{amx: true, kb: kBlock, wres: true}},
		}
	} else {
		skipUnlessVNNI(b)
	}
	for _, c := range prefill3B(b, quant.Q4_K) {
		s, w := c.s, c.w
		for i, pr := range progs {
			for _, lay := range []string{"stored", "r16"} {
				if i > 0 && lay == "stored" {
					continue // the other programs on the shipped layout only
				}
				f, wts := formatQ4K, w.W
				if lay == "r16" {
					f, wts = formatQ4KR16, q4kR16(b, w.W, s.Rows, s.K)
				}
				for _, rung := range []string{"hot", "cold", "unpack", "matmul", "hot-2t", "unpack-2t"} {
					b.Run(fmt.Sprintf("program=%s/layout=%s/rung=%s/shape=%dx%dx%d", pr.name, lay, rung, s.Rows, s.K, s.N), func(b *testing.B) {
						ladderRung(b, f, pr.p, rung, wts, w.XQ, s.Rows, s.K, s.N)
					})
				}
			}
		}
	}
}

// prefill3B is matmul/typ's 3B shapes at 512 tokens, each with its
// workload.
func prefill3B(b *testing.B, typ quant.Type) (out []struct {
	s ledger.Shape
	w *workload.Workload
}) {
	op, _ := ledger.LookupOp(ledger.MatMulOp(typ))
	for _, s := range op.Shapes {
		if s.Model != "3B" {
			continue
		}
		s.N = 512
		w, err := workload.New(op, s, 1)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, struct {
			s ledger.Shape
			w *workload.Workload
		}{s, w})
	}
	return out
}

// q4kR16 is the Q4_K matrix w (rows × k) in the interleaved layout.
func q4kR16(b *testing.B, w []byte, rows, k int) []byte {
	out := make([]byte, avx512.Q4KR16Layout.GroupBytes(k)*((rows+15)/16))
	if err := avx512.Q4KR16Layout.Repack(out, w, rows, k); err != nil {
		b.Fatal(err)
	}
	return out
}

// ladderRung times one rung of BenchmarkStepLadder.
func ladderRung(b *testing.B, f weightFormat, p program, rung string, w, xq []byte, rows, k, n int) {
	nb := k / qk
	dst := make([]float32, n*rows)
	pack := aligned(nil, activationPackBytes(n, nb))
	packActivations(pack, xq, 0, n, n, nb, f.sum32)
	tiles := (rows + tileRows - 1) / tileRows
	kb := nb // the K block runPacked uses
	if p.kb > 0 && !p.fitL2 {
		kb = min(p.kb, nb)
	}
	slot := kb * wSBBytes
	var panels []byte
	base, two := strings.CutSuffix(rung, "-2t")
	switch base {
	case "hot":
		panels = aligned(nil, slot)
		f.pack(panels, w, tileRows, nb, 0, kb)
	case "cold":
		panels = aligned(nil, tiles*((nb+kb-1)/kb)*slot)
		for sb0 := 0; sb0 < nb; sb0 += kb {
			for t := 0; t < tiles; t++ {
				r0 := t * tileRows
				f.pack(panels[((sb0/kb)*tiles+t)*slot:], w[r0*nb*f.blkBytes:], min(tileRows, rows-r0), nb, sb0, min(kb, nb-sb0))
			}
		}
	}
	run := func(r0, r1 int) {
		s := getScratch()
		defer putScratch(s)
		rr := r1 - r0
		switch base {
		case "hot":
			f.runPacked(p, s, dst[r0:], rows, rr, pack, n, k, func(_ *scratch, _, _, _, _ int) *byte { return &panels[0] })
		case "cold":
			f.runPacked(p, s, dst[r0:], rows, rr, pack, n, k, func(_ *scratch, t0, _, sb0, _ int) *byte {
				return &panels[((sb0/kb)*tiles+(r0+t0)/tileRows)*slot]
			})
		case "unpack":
			f.runPacked(p, s, dst[r0:], rows, rr, pack, n, k, func(s *scratch, t0, tr, sb0, nsb int) *byte {
				return f.unpackPanel(p, s, w[r0*nb*f.blkBytes:], rr, nb, t0, tr, sb0, nsb)
			})
		case "matmul":
			matMul(f, p)(dst[r0:], rows, w[r0*nb*f.blkBytes:], rr, xq, n, k)
		}
	}
	threads := 1
	call := func() { run(0, rows) }
	if two {
		threads = 2
		half := (tiles + 1) / 2 * tileRows
		call = func() {
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); run(0, half) }()
			go func() { defer wg.Done(); run(half, rows) }()
			wg.Wait()
		}
	}
	call()
	for b.Loop() {
		call()
	}
	steps := float64(tiles*nb) * float64((n+pairTokens-1)/pairTokens)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())*float64(threads)/(steps*float64(b.N)), "ns/step")
}

// BenchmarkStepCPU times the ladder's hot rung (amx-int8-il, interleaved
// layout, 3072×3072, 512 tokens) with the benchmark's thread pinned to each
// CPU in turn, then unpinned: whether the slow samples (≈ 2× the fast ones
// on the lent host, in every rung) belong to some CPUs or to moments.
func BenchmarkStepCPU(b *testing.B) {
	skipUnlessAMX(b)
	op, _ := ledger.LookupOp(ledger.MatMulOp(quant.Q4_K))
	s := ledger.Shape{Rows: 3072, K: 3072, N: 512, Model: "3B"}
	w, err := workload.New(op, s, 1)
	if err != nil {
		b.Fatal(err)
	}
	wts := q4kR16(b, w.W, s.Rows, s.K)
	p := program{amx: true, kb: kBlock, interleave: true}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		b.Fatal(err)
	}
	for cpu := -1; cpu < 1024; cpu++ {
		if cpu >= 0 && !all.IsSet(cpu) {
			continue
		}
		name := "cpu=any"
		if cpu >= 0 {
			name = fmt.Sprintf("cpu=%d", cpu)
		}
		b.Run(name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if cpu >= 0 {
				var one unix.CPUSet
				one.Set(cpu)
				if err := unix.SchedSetaffinity(0, &one); err != nil {
					b.Fatal(err)
				}
				defer unix.SchedSetaffinity(0, &all)
			}
			ladderRung(b, formatQ4KR16, p, "hot", wts, w.XQ, s.Rows, s.K, s.N)
		})
	}
}

// BenchmarkQ5KMatMul times the registered matmul/q5_k variants that run
// here at the 3B shapes, 512 tokens, one thread (GFLOP/s): Q5_K's AMX tile
// program against the sub-block-sum GEMM and the batched kernel, before a
// `ledger run` decides between them.
func BenchmarkQ5KMatMul(b *testing.B) {
	op, _ := ledger.LookupOp(ledger.MatMulOp(quant.Q5_K))
	for _, c := range prefill3B(b, quant.Q5_K) {
		s, w := c.s, c.w
		for _, name := range []string{"amx-int8-il", "avx512-vnni-sub", "avx512-vnni"} {
			v, ok := ledger.Lookup(op.Name, name)
			if !ok || !v.Available() {
				continue
			}
			mm := v.Impl.(ledger.MatMul)
			b.Run(fmt.Sprintf("variant=%s/shape=%dx%dx%d", name, s.Rows, s.K, s.N), func(b *testing.B) {
				dst := make([]float32, s.N*s.Rows)
				for b.Loop() {
					mm(dst, s.Rows, w.W, s.Rows, w.XQ, s.N, s.K)
				}
				b.ReportMetric(2*float64(s.Rows*s.K*s.N)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
