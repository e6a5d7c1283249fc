package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

// TestFoldNoSpills fails on any spill or stack frame of dattn.cu's kernels
// (their registers hold a pass's keys, values, queries and outputs), or
// where a kernel's registers would not let three blocks of 128 threads
// share an SM (the grid is 32 blocks a KV head: 256 on 132 SMs at 8 KV
// heads).
func TestFoldNoSpills(t *testing.T) {
	requireNoSpills(t, "dattn.cu", nil, 65536/(3*128), foldKernelNames()...)
}

// TestFoldKernelChoice pins which heads dattn.cu takes.
func TestFoldKernelChoice(t *testing.T) {
	for _, c := range []struct {
		hd, g int
		want  string
	}{
		{128, 3, "dattn_fold_d4_g4"}, {64, 4, "dattn_fold_d2_g4"}, {64, 8, "dattn_fold_d2_g8"}, {32, 1, "dattn_fold_d1_g4"},
		{128, 5, "dattn_fold_d4_g8"}, {96, 2, ""}, {16, 1, ""}, {128, 9, ""},
	} {
		if got := foldKernel(c.hd, c.g); got != c.want {
			t.Errorf("foldKernel(%d, %d) = %q, want %q", c.hd, c.g, got, c.want)
		}
	}
}

// TestFoldMatchesSerial holds cuda-flash-fold to cuda-flash (dattn_split +
// eattn_combine) at the engine's shapes and at depths where a split spans
// several passes of 4·P positions and where most splits are empty, and
// then again, so that a counter left non-zero by a call shows.
func TestFoldMatchesSerial(t *testing.T) {
	needCUDA(t)
	r := ledgertest.NewRand(23)
	for _, c := range []struct{ heads, kv, hd, ctx int }{
		{24, 8, 128, 1}, {24, 8, 128, 7}, {24, 8, 128, 256}, {24, 8, 128, 1030}, {24, 8, 128, 4099},
		{32, 8, 64, 300}, {32, 4, 64, 2000}, {8, 8, 32, 65}, {16, 2, 128, 513},
	} {
		t.Run(fmt.Sprintf("h%dkv%dd%dctx%d", c.heads, c.kv, c.hd, c.ctx), func(t *testing.T) {
			n, kvn := c.heads*c.hd, c.ctx*c.kv*c.hd
			q, k, v := ledgertest.Floats(r, n), ledgertest.Floats(r, kvn), ledgertest.Floats(r, kvn)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			want := make([]float32, n)
			flashAttention("dattn_split", want, q, k, v, c.heads, c.kv, c.hd, c.ctx, scale)
			for rep := range 2 {
				got := make([]float32, n)
				flashAttention("dattn_fold", got, q, k, v, c.heads, c.kv, c.hd, c.ctx, scale)
				worst, mag := 0.0, 0.0
				for i := range want {
					worst = max(worst, math.Abs(float64(got[i]-want[i])))
					mag = max(mag, math.Abs(float64(want[i])))
				}
				if worst > 2e-6*mag || math.IsNaN(worst) {
					t.Fatalf("call %d: worst difference %.3g of the largest |value| %.3g", rep, worst, mag)
				}
			}
		})
	}
}
