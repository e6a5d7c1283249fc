package cuda

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The persistent kernels are one body each with every step inlined: ptxas
// must fit them in their registers without spilling (a spill is local
// memory, which a PTX check does not see). TestKernelsCompile's checks
// too, since the files are not among sourceFiles (loaded on first use).
// Needs NVRTC only.
func TestPersistentNoSpills(t *testing.T) {
	for _, f := range []lazyFile{persistentFile, megaFile} {
		t.Run(f.name, func(t *testing.T) {
			c, _ := requireNoSpills(t, f.name, f.uses, 0, f.kernels...)
			ptx := string(c.PTX)
			for _, k := range f.kernels {
				if !strings.Contains(ptx, ".entry "+k+"(") {
					t.Errorf("no kernel %s in the PTX", k)
				}
			}
			if regexp.MustCompile(`\.local|ld\.local|st\.local`).MatchString(ptx) {
				t.Errorf("the PTX uses local memory")
			}
			if len(c.CUBIN) == 0 {
				t.Errorf("no cubin")
			}
		})
	}
}

// cuda-persist's and cuda-mega's rows are cuda's to the bit: the same
// lanes, the same sums, only the rows' loads (two rows a warp from global
// memory; a row a warp from a ring in shared memory) and the activations
// in shared memory.
func TestPersistentMatVecBitIdentical(t *testing.T) {
	needCUDA(t)
	for _, v := range []struct {
		name string
		mv   func(*format) ledger.MatVec
	}{{"cuda-persist", hostPersistMatVec}, {"cuda-mega", func(f *format) ledger.MatVec { return hostMatVec(f, (*gpu).megaMatVec) }},
		{"cuda-mega2", func(f *format) ledger.MatVec { return hostMatVec(f, (*gpu).megaMatVec2) }}} {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
			for _, sh := range []struct{ rows, k int }{{3072, 3072}, {1024, 3072}, {3072, 8192}, {8192, 3072}, {33, 256}, {7, 512}, {1000, 8192}} {
				w := randomRows(t, rng, wt, sh.rows, sh.k)
				at := ledger.ActivationType(wt)
				xq := randomRows(t, rng, at, 1, sh.k)
				xq = append(xq, make([]byte, 8)...) // the Q8_0 reader's slack
				want, got := make([]float32, sh.rows), make([]float32, sh.rows)
				hostMatVec(formats[wt], unrolledMV(1))(want, w, xq, sh.k)
				v.mv(formats[wt])(got, w, xq, sh.k)
				diff := 0
				for i := range want {
					if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
						if diff < 3 {
							t.Errorf("%s %s %d×%d row %d: %g, cuda %g", v.name, wt, sh.rows, sh.k, i, got[i], want[i])
						}
						diff++
					}
				}
				if diff > 0 {
					t.Errorf("%s %s %d×%d: %d of %d rows differ", v.name, wt, sh.rows, sh.k, diff, sh.rows)
				}
			}
		}
	}
}

// randomRows quantizes rows of k values from N(0, 1) as typ.
func randomRows(t *testing.T, rng *rand.Rand, typ quant.Type, rows, k int) []byte {
	t.Helper()
	rb, err := quant.RowSize(typ, int64(k))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out := make([]byte, rows*int(rb))
	if err := quant.Quantize(typ, x, out); err != nil {
		t.Fatal(err)
	}
	return out
}
