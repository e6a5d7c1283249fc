package cuda

import (
	"fmt"
	"math"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
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

// TestRopeFoldMatchesRopeStore holds RopeDecodeAttention's one launch
// (rope_store's work inside dattn_fold) to rope_store followed by the
// fold, bit for bit: the attention's output and the cache rows it stores
// at the token's position, at every instance (head sizes 32, 64, 128; four
// and eight heads a KV head), both pairings of rope (interleaved, neox),
// and positions in the first split, in a middle one and past a pass.
func TestRopeFoldMatchesRopeStore(t *testing.T) {
	needCUDA(t)
	r := ledgertest.NewRand(29)
	for _, c := range []struct{ heads, kv, hd, pos int }{
		{24, 8, 128, 0}, {24, 8, 128, 300}, {32, 8, 64, 1029}, {16, 2, 64, 77}, {8, 8, 32, 40}, {16, 2, 128, 5},
	} {
		for _, neox := range []bool{false, true} {
			t.Run(fmt.Sprintf("h%dkv%dd%dpos%d/neox=%v", c.heads, c.kv, c.hd, c.pos, neox), func(t *testing.T) {
				nctx := c.pos + 3
				q, k, v := ledgertest.Floats(r, c.heads*c.hd), ledgertest.Floats(r, c.kv*c.hd), ledgertest.Floats(r, c.kv*c.hd)
				kc, vc := ledgertest.Floats(r, c.kv*nctx*c.hd), ledgertest.Floats(r, c.kv*nctx*c.hd)
				ang := ledgertest.Floats(r, nctx*c.hd/2)
				cosT, sinT := make([]float32, len(ang)), make([]float32, len(ang))
				for i, a := range ang {
					cosT[i], sinT[i] = float32(math.Cos(3*float64(a))), float32(math.Sin(3*float64(a)))
				}
				scale := float32(1 / math.Sqrt(float64(c.hd)))
				type result struct{ out, kc, vc []float32 }
				attend := func(fused bool) result {
					res := result{make([]float32, c.heads*c.hd), make([]float32, len(kc)), make([]float32, len(vc))}
					host(func(g *gpu, th *cu.Thread, s cu.Stream) error {
						l := &Launcher{r: g, T: th, S: s, DecodeAttn: "dattn_fold"}
						p := map[string]cu.Ptr{}
						for name, h := range map[string][]float32{"rq": q, "rk": k, "rv": v, "rkc": kc, "rvc": vc, "rcos": cosT, "rsin": sinT} {
							ptr, err := upload(g, th, s, name, h)
							if err != nil {
								return err
							}
							p[name] = ptr
						}
						pp, err := upload(g, th, s, "rpos", []int32{int32(c.pos)})
						if err != nil {
							return err
						}
						po, err := g.buf(th, "po", 4*DecodeSplits*c.heads*c.hd)
						if err != nil {
							return err
						}
						pml, err := g.buf(th, "pml", 8*DecodeSplits*c.heads)
						if err != nil {
							return err
						}
						cnt, err := g.buf(th, "cnt", 4*c.kv)
						if err != nil {
							return err
						}
						if err := th.MemsetD32Async(cnt, 0, c.kv, s); err != nil {
							return err
						}
						out, err := g.buf(th, "dst", 4*c.heads*c.hd)
						if err != nil {
							return err
						}
						if fused {
							err = l.RopeDecodeAttention(out, p["rq"], p["rk"], p["rv"], p["rkc"], p["rvc"], po, pml, cnt, pp,
								c.heads, c.kv, c.hd, nctx, scale, p["rcos"], p["rsin"], neox)
						} else if err = l.RopeStore(p["rq"], p["rk"], p["rv"], p["rkc"], p["rvc"], pp, 1, c.heads, c.kv, c.hd, nctx,
							p["rcos"], p["rsin"], neox); err == nil {
							err = l.DecodeAttention(out, p["rq"], p["rkc"], p["rvc"], po, pml, cnt, pp, c.heads, c.kv, c.hd, nctx, scale)
						}
						if err != nil {
							return err
						}
						for _, d := range []struct {
							h []float32
							p cu.Ptr
						}{{res.out, out}, {res.kc, p["rkc"]}, {res.vc, p["rvc"]}} {
							if err := cu.DtoHAsync(th, d.h, d.p, s); err != nil {
								return err
							}
						}
						return nil
					})
					return res
				}
				want, got := attend(false), attend(true)
				for _, part := range []struct {
					name      string
					got, want []float32
				}{{"output", got.out, want.out}, {"key cache", got.kc, want.kc}, {"value cache", got.vc, want.vc}} {
					for i := range part.want {
						if math.Float32bits(part.got[i]) != math.Float32bits(part.want[i]) {
							t.Fatalf("%s[%d] = %v, rope_store then the fold %v", part.name, i, part.got[i], part.want[i])
						}
					}
				}
			})
		}
	}
}
