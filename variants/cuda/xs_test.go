package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
)

// TestXSNoSpills holds the cuda-xs kernels to no spills and no stack, and
// their registers to three blocks of 256 threads an SM (two for mv_xs4,
// whose four rows' loads take 128).
func TestXSNoSpills(t *testing.T) {
	_, res := requireNoSpills(t, "matvec.cu", nil, 0, "mv_xs1", "mv_xs2", "mv_xs4")
	for k, most := range map[string]int{"mv_xs1": 65536 / (3 * 32 * xsWarps), "mv_xs2": 65536 / (3 * 32 * xsWarps), "mv_xs4": 65536 / (2 * 32 * xsWarps)} {
		if r := res[k].regs; r > most {
			t.Errorf("%s: %d registers, more than %d", k, r, most)
		}
	}
}

// The cuda-xs kernels are cuda's lanes and sums with the activations read
// from shared memory: the same bits, at every rows-a-warp count, for row
// counts that leave a block or a warp part empty.
func TestXSMatchesWarp(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	var mvs []namedMV
	for _, x := range xsVariants {
		mvs = append(mvs, namedMV{x.name, xsMV(x.rows)})
	}
	requireWarpBits(t, rng, []mvShape{{3072, 3072}, {1024, 3072}, {3072, 8192}, {8192, 3072}, {33, 256}, {7, 512}, {1, 256}, {67, 2304}}, mvs)
}

// namedMV is a matvec variant's launch, by the variant's name.
type namedMV struct {
	name string
	mv   mvLaunch
}

// mvShape is a matvec's rows of k values.
type mvShape struct{ rows, k int }

// requireWarpBits requires each of mvs to give cuda's warp-per-row kernel's
// bits, for Q4_K then Q6_K weights at each shape, on random weights and a
// random Q8_K row (the cuda-xs and cuda-early kernels are cuda's lanes and
// sums). Without a device it skips.
func requireWarpBits(t *testing.T, rng *rand.Rand, shapes []mvShape, mvs []namedMV) {
	t.Helper()
	needCUDA(t)
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		for _, sh := range shapes {
			w := randomRows(t, rng, wt, sh.rows, sh.k)
			xq := randomRows(t, rng, quant.Q8_K, 1, sh.k)
			want := make([]float32, sh.rows)
			hostMatVec(formats[wt], unrolledMV(1))(want, w, xq, sh.k)
			for _, v := range mvs {
				got := make([]float32, sh.rows)
				hostMatVec(formats[wt], v.mv)(got, w, xq, sh.k)
				requireSameBits(t, fmt.Sprintf("%s %s %d×%d", v.name, wt, sh.rows, sh.k), got, want)
			}
		}
	}
}

// One cuda-xs launch of three products of mixed types (QKV of a Q4_K_M
// layer whose V is Q6_K) gives each product's bits as a launch of its own.
func TestXSMulti(t *testing.T) {
	needCUDA(t)
	rng := rand.New(rand.NewPCG(14, 2))
	const k = 3072
	types := []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q4_K}
	rows := []int{3072, 1024, 1000}
	xq := randomRows(t, rng, quant.Q8_K, 1, k)
	ws := make([][]byte, 3)
	want := make([][]float32, 3)
	for i, wt := range types {
		ws[i] = formats[wt].deviceWeights(randomRows(t, rng, wt, rows[i], k), rows[i], k)
		want[i] = make([]float32, rows[i])
	}
	for _, x := range xsVariants {
		got := make([][]float32, 3)
		host(func(r *gpu, th *cu.Thread, s cu.Stream) error {
			px, err := upload(r, th, s, "x", xq)
			if err != nil {
				return err
			}
			segs := make([]XSSeg, 3)
			for i := range segs {
				pw, err := upload(r, th, s, fmt.Sprintf("w%d", i), ws[i])
				if err != nil {
					return err
				}
				pd, err := r.poisoned(th, s, fmt.Sprintf("dst%d", i), rows[i])
				if err != nil {
					return err
				}
				segs[i] = XSSeg{Dst: pd, W: pw, Rows: rows[i], Type: types[i]}
			}
			for i := range segs { // each product alone, with the warp-per-row kernel
				pd, err := r.buf(th, fmt.Sprintf("want%d", i), 4*rows[i])
				if err != nil {
					return err
				}
				if err := r.matVec(th, s, formats[types[i]], 1, pd, segs[i].W, rows[i], px, k); err != nil {
					return err
				}
				if err := cu.DtoHAsync(th, want[i], pd, s); err != nil {
					return err
				}
			}
			if err := r.matVecXS(th, s, x.rows, px, k, segs); err != nil {
				return err
			}
			for i := range segs {
				got[i] = make([]float32, rows[i])
				if err := cu.DtoHAsync(th, got[i], segs[i].Dst, s); err != nil {
					return err
				}
			}
			return nil
		})
		for i := range got {
			requireSameBits(t, fmt.Sprintf("%s product %d (%s)", x.name, i, types[i]), got[i], want[i])
		}
	}
}

// requireSameBits fails where got and want differ in any bit (NaN, the
// poison of an unwritten output, included).
func requireSameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	diff := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if diff < 3 {
				t.Errorf("%s row %d: %g, want %g", what, i, got[i], want[i])
			}
			diff++
		}
	}
	if diff > 0 {
		t.Errorf("%s: %d of %d rows differ", what, diff, len(want))
	}
}

// The cuda-xs kernels refuse what they do not take with an error.
func TestXSRefuses(t *testing.T) {
	needCUDA(t)
	host(func(r *gpu, th *cu.Thread, s cu.Stream) error {
		for _, c := range []struct {
			rows, k int
			segs    []XSSeg
			want    string
		}{
			{3, 256, []XSSeg{{Rows: 1, Type: quant.Q4_K}}, "rows a warp"},
			{2, 256, nil, "one to three"},
			{2, 100, []XSSeg{{Rows: 1, Type: quant.Q4_K}}, "multiple of 256"},
			{2, 256, []XSSeg{{Rows: 1, Type: quant.Q8_0}}, "no kernel for Q8_0"},
		} {
			err := r.matVecXS(th, s, c.rows, 0, c.k, c.segs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("rows %d k %d %v: %v, want an error with %q", c.rows, c.k, c.segs, err, c.want)
			}
		}
		return nil
	})
}

// TestProNoSpills holds the cuda-pro kernels to no spills and no stack.
func TestProNoSpills(t *testing.T) {
	requireNoSpills(t, "mvp.cu", []string{"quantize.cu", "matvec.cu"}, 0, "mv_pro1", "mv_pro2")
}
