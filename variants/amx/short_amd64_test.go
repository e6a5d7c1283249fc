//go:build !noasm

package amx

import (
	"fmt"
	"os"
	"testing"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
)

// BenchmarkShortStep locates a short prefill step's time (issue 19): one
// thread's matmul of 16 or 32 tokens (512 for scale) at two of the 1B's
// Q4_K shapes, its weights hot (one copy) or cold (workload.ColdCopies, as
// an engine step finds them), beside the weight unpacking alone
// (variant=unpack, and unpack-pf with the prefetching packer). It reports ns
// per step of 16 rows × one super-block, the unit of BenchmarkTileStep, so
// that the three read against each other: a step's cost in the engine's
// call, its unpacking share, and the tile program's in L2. The variants are
// DAMASCUS_SHORT_VARIANTS (comma-separated) or the shipped and prefetching
// tile programs with their VNNI twins; each runs where its CPU features are.
func BenchmarkShortStep(b *testing.B) {
	names := cli.SplitList(os.Getenv("DAMASCUS_SHORT_VARIANTS"))
	if len(names) == 0 {
		names = []string{"amx-int8-il", "amx-int8-il-pf2", "avx512-vnni-tiles", "avx512-vnni-tiles-pf2"}
	}
	op, _ := ledger.LookupOp(ledger.MatMulOp(quant.Q4_K))
	for _, rk := range [][2]int{{2048, 2048}, {8192, 2048}} {
		for _, n := range []int{16, 32, 512} {
			s := ledger.Shape{Rows: rk[0], K: rk[1], N: n}
			for _, temp := range []string{"hot", "cold"} {
				for _, name := range append([]string{"unpack", "unpack-pf"}, names...) {
					if n != 16 && name == "unpack-pf" || n != 16 && name == "unpack" {
						continue // the unpacking does not depend on n
					}
					b.Run(fmt.Sprintf("variant=%s/shape=%dx%dn%d/weights=%s", name, s.Rows, s.K, n, temp), func(b *testing.B) {
						benchShortStep(b, op, s, name, temp == "cold")
					})
				}
			}
		}
	}
}

func benchShortStep(b *testing.B, op *ledger.Op, s ledger.Shape, name string, cold bool) {
	var impl any
	switch name {
	case "unpack", "unpack-pf":
		skipUnlessVNNI(b)
		p := program{pfPack: name == "unpack-pf"}
		nb := s.K / qk
		var sc scratch
		impl = ledger.MatMul(func(_ []float32, _ int, w []byte, rows int, _ []byte, _, _ int) {
			for r0 := 0; r0 < rows; r0 += tileRows {
				formatQ4K.unpackPanel(p, &sc, w, rows, nb, r0, min(tileRows, rows-r0), 0, nb)
			}
		})
	default:
		v, ok := ledger.Lookup(op.Name, name)
		if !ok {
			b.Fatalf("%s: no variant %q", op.Name, name)
		}
		if !v.Available() {
			b.Skipf("%s: CPU lacks %v", name, v.Missing())
		}
		impl = v.Impl
	}
	w, err := workload.New(op, s, 1)
	if err != nil {
		b.Fatal(err)
	}
	copies := []*workload.Workload{w}
	if cold {
		copies = w.ColdCopies()
	}
	call, err := workload.Cycle(copies, impl, make([]float32, w.OutLen()), nil)
	if err != nil {
		b.Fatal(err)
	}
	call()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
	steps := float64(b.N) * float64(s.Rows/tileRows) * float64(s.K/qk)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/steps, "ns/step")
}
