package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
)

// TestEarlyNoSpills holds the cuda-early kernels to no spills and no
// stack: cuda-early2's next step's loads double the weights held in
// registers.
func TestEarlyNoSpills(t *testing.T) {
	requireNoSpills(t, "matvec.cu", nil, 0, "q4k_mv_e", "q6k_mv_e", "mv_multi_e", "q4k_mv_e2", "q6k_mv_e2", "mv_multi_e2")
}

// The cuda-early kernels are cuda's loads and sums issued earlier: the
// same bits, alone and in one mv_multi_e launch of mixed types, for row
// counts that leave a block or a warp part empty and rows of one step.
func TestEarlyMatchesWarp(t *testing.T) {
	needCUDA(t)
	rng := rand.New(rand.NewPCG(15, 1))
	var mvs []namedMV
	for _, e := range earlyVariants {
		mvs = append(mvs, namedMV{e.name, earlyMV(e.e)})
	}
	// Row counts small enough for the host's reference quantizer (the
	// lanes' work does not depend on them), row lengths of the 3B's.
	requireWarpBits(t, rng, []mvShape{{96, 3072}, {40, 8192}, {33, 256}, {7, 512}, {1, 256}, {67, 2304}}, mvs)

	const k = 3072
	types := []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q4_K}
	rows := []int{300, 100, 67}
	xq := randomRows(t, rng, quant.Q8_K, 1, k)
	e, err := OpenEngine()
	if err != nil {
		t.Fatal(err)
	}
	var want [3][]float32
	got := map[int]*[3][]float32{}
	err = e.Do(func(l *Launcher) error {
		px, err := upload(l.r, l.T, l.S, "x", xq)
		if err != nil {
			return err
		}
		ws := make([]Weights, 3)
		dst := make([]cu.Ptr, 3)
		for i, wt := range types {
			dw := formats[wt].deviceWeights(randomRows(t, rng, wt, rows[i], k), rows[i], k)
			p, err := upload(l.r, l.T, l.S, fmt.Sprintf("w%d", i), dw)
			if err != nil {
				return err
			}
			ws[i] = Weights{P: p, Type: wt, Rows: rows[i], Cols: k, f: formats[wt]}
			if dst[i], err = l.r.buf(l.T, fmt.Sprintf("dst%d", i), 4*rows[i]); err != nil {
				return err
			}
		}
		for _, early := range []int{0, 1, 2} {
			for i := range dst {
				if err := l.T.MemsetD32Async(dst[i], poison, rows[i], l.S); err != nil {
					return err
				}
			}
			l.Early = early
			if err := l.MatVecMulti(px, dst, ws); err != nil {
				return err
			}
			out := &want
			if early > 0 {
				out = new([3][]float32)
				got[early] = out
			}
			for i := range dst {
				out[i] = make([]float32, rows[i])
				if err := cu.DtoHAsync(l.T, out[i], dst[i], l.S); err != nil {
					return err
				}
			}
			if err := l.T.Sync(l.S); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for e, g := range got {
		for i := range g {
			requireSameBits(t, fmt.Sprintf("mv_multi E=%d product %d (%s)", e, i, types[i]), g[i], want[i])
		}
	}
}
