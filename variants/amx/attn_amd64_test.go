//go:build !noasm

package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/variants/naive"
)

// bf16RNE is float32 → bfloat16, rounded to nearest even (finite values).
func bf16RNE(f float32) uint16 {
	b := math.Float32bits(f)
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func bf16Float(h uint16) float64 { return float64(math.Float32frombits(uint32(h) << 16)) }

func needAVX512(t *testing.T) {
	t.Helper()
	if miss := cpufeat.Missing("avx512f", "avx512bw", "avx512vl"); len(miss) > 0 {
		t.Skipf("needs %v", miss)
	}
}

// TestBF16Converters checks the vector converters against plain Go
// over several lengths, with guard values after each output.
func TestBF16Converters(t *testing.T) {
	needAVX512(t)
	const guard = 0xdead
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{16, 32, 64, 128, 272} {
		src := make([]float32, n)
		src2 := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3)))
			src2[i] = float32(rng.NormFloat64())
		}
		src[0], src[1] = 1.00390625, 1.01171875 // ties: to even down and up

		dst := make([]uint16, n+8)
		for i := range dst {
			dst[i] = guard
		}
		cvtBF16Scaled(&dst[0], &src[0], n, 0.5)
		for i := range n {
			if want := bf16RNE(src[i] * 0.5); dst[i] != want {
				t.Fatalf("n=%d cvtBF16Scaled[%d] of %g = %#x, want %#x", n, i, src[i]*0.5, dst[i], want)
			}
		}
		for i := n; i < n+8; i++ {
			if dst[i] != guard {
				t.Fatalf("n=%d cvtBF16Scaled wrote past its end at %d", n, i)
			}
		}

		hi, lo := make([]uint16, n+8), make([]uint16, n+8)
		for i := range hi {
			hi[i], lo[i] = guard, guard
		}
		cvtBF16Split(&hi[0], &lo[0], &src[0], n, 3)
		for i := range n {
			x := src[i] * 3
			wantHi := bf16RNE(x)
			wantLo := bf16RNE(x - float32(bf16Float(wantHi)))
			if hi[i] != wantHi || lo[i] != wantLo {
				t.Fatalf("n=%d cvtBF16Split[%d] of %g = %#x + %#x, want %#x + %#x", n, i, x, hi[i], lo[i], wantHi, wantLo)
			}
		}
		if hi[n] != guard || lo[n] != guard {
			t.Fatalf("n=%d cvtBF16Split wrote past its end", n)
		}

		pairs := make([]uint32, n+4)
		for i := range pairs {
			pairs[i] = guard
		}
		interleaveBF16(&pairs[0], &src[0], &src2[0], n)
		for i := range n {
			if want := uint32(bf16RNE(src[i])) | uint32(bf16RNE(src2[i]))<<16; pairs[i] != want {
				t.Fatalf("n=%d interleaveBF16[%d] = %#x, want %#x", n, i, pairs[i], want)
			}
		}
		if pairs[n] != guard {
			t.Fatalf("n=%d interleaveBF16 wrote past its end", n)
		}

		plo := make([]uint32, n+4)
		for i := range pairs {
			pairs[i], plo[i] = guard, guard
		}
		interleaveBF16Split(&pairs[0], &plo[0], &src[0], &src2[0], n)
		for i := range n {
			h0, h1 := bf16RNE(src[i]), bf16RNE(src2[i])
			l0, l1 := bf16RNE(src[i]-float32(bf16Float(h0))), bf16RNE(src2[i]-float32(bf16Float(h1)))
			if wantHi, wantLo := uint32(h0)|uint32(h1)<<16, uint32(l0)|uint32(l1)<<16; pairs[i] != wantHi || plo[i] != wantLo {
				t.Fatalf("n=%d interleaveBF16Split[%d] = %#x + %#x, want %#x + %#x", n, i, pairs[i], plo[i], wantHi, wantLo)
			}
		}
		if pairs[n] != guard || plo[n] != guard {
			t.Fatalf("n=%d interleaveBF16Split wrote past its end", n)
		}

		for _, m := range []int{1, 5, n - 1, n} {
			s := append([]float32(nil), src2...)
			p := make([]uint16, n+8)
			for i := range p {
				p[i] = guard
			}
			const scale = 0.0883883476 // 1/√128
			softmaxBF16(&p[0], &s[0], m, n, scale)
			mx := math.Inf(-1)
			for _, x := range src2[:m] {
				mx = math.Max(mx, scale*float64(x))
			}
			var sum float64
			for _, x := range src2[:m] {
				sum += math.Exp(scale*float64(x) - mx)
			}
			for i := range n {
				want := 0.0
				if i < m {
					want = math.Exp(scale*float64(src2[i])-mx) / sum
				}
				// One bf16 step (2^-8 relative) covers exp's few float32 ulps.
				if got := bf16Float(p[i]); math.Abs(got-want) > want/256+1e-30 {
					t.Fatalf("n=%d m=%d softmaxBF16[%d] = %g, want %g", n, m, i, got, want)
				}
			}
			if p[n] != guard {
				t.Fatalf("n=%d m=%d softmaxBF16 wrote past npad", n, m)
			}
			// The split form: hi the same bf16s, hi + lo within 2^-16 of
			// each probability (and of the same exp), zeros to npad.
			s = append(s[:0], src2...)
			ph, pl := make([]uint16, n+8), make([]uint16, n+8)
			for i := range ph {
				ph[i], pl[i] = guard, guard
			}
			softmaxBF16Split(&ph[0], &pl[0], &s[0], m, n, scale)
			for i := range n {
				want := 0.0
				if i < m {
					want = math.Exp(scale*float64(src2[i])-mx) / sum
				}
				if ph[i] != p[i] {
					t.Fatalf("n=%d m=%d softmaxBF16Split hi[%d] = %#x, softmaxBF16's %#x", n, m, i, ph[i], p[i])
				}
				if got := bf16Float(ph[i]) + bf16Float(pl[i]); math.Abs(got-want) > want/65536+want*4e-7+1e-30 {
					t.Fatalf("n=%d m=%d softmaxBF16Split[%d] = %g, want %g", n, m, i, got, want)
				}
			}
			if ph[n] != guard || pl[n] != guard {
				t.Fatalf("n=%d m=%d softmaxBF16Split wrote past npad", n, m)
			}
		}
	}
}

// emulatedAttnTiles are the two tile programs in plain Go, read straight
// off the panel layouts, with float64 sums.
var emulatedAttnTiles = attnTiles{scores: emulateScores, pv: emulatePV}

func emulateScores(a *attnArgs) {
	ks, qs := a.ksteps, a.qStride/2
	q := unsafe.Slice((*uint16)(unsafe.Pointer(a.q)), attnRows*qs)
	kp := unsafe.Slice((*uint16)(unsafe.Pointer(a.kp)), a.steps*2*ks*512)
	s := unsafe.Slice(a.s, attnRows*a.sStride/4)
	for b := range 2 * a.steps {
		for m := range attnRows {
			for n := range 16 {
				var sum float64
				for c := range ks {
					tile := kp[(b*ks+c)*512:]
					for kpair := range 16 {
						for e := range 2 {
							sum += bf16Float(q[m*qs+32*c+2*kpair+e]) * bf16Float(tile[kpair*32+2*n+e])
						}
					}
				}
				s[m*a.sStride/4+b*16+n] = float32(sum)
			}
		}
	}
}

func emulatePV(a *attnArgs) {
	hd := a.hd
	p := unsafe.Slice((*uint16)(unsafe.Pointer(a.p)), attnRows*a.pStride/2)
	vp := unsafe.Slice((*uint16)(unsafe.Pointer(a.vp)), a.steps*16*hd*2)
	o := unsafe.Slice(a.o, attnRows*hd)
	for m := range attnRows {
		for d := range hd {
			var sum float64
			for st := range a.steps {
				for kpair := range 16 {
					for e := range 2 {
						sum += bf16Float(p[m*a.pStride/2+st*32+2*kpair+e]) * bf16Float(vp[(st*16+kpair)*hd*2+2*d+e])
					}
				}
			}
			o[m*hd+d] = float32(sum)
		}
	}
}

// attnTileShapes are the attention_batch shapes the tile programs take
// (head sizes 64 and 128): the catalogue's, and tails of tokens, of
// positions and of query heads per KV head.
// Batches longer than maxN are left out (the emulation is slow).
func attnTileShapes(t *testing.T, maxN int) []ledger.Shape {
	op, _ := ledger.LookupOp(ledger.OpAttentionBatch)
	var shapes []ledger.Shape
	for _, s := range op.Shapes {
		if attnTilesFit(s.HeadDim) && s.N >= 2 && s.N <= maxN {
			shapes = append(shapes, s)
		}
	}
	shapes = append(shapes,
		ledger.Shape{Heads: 3, KVHeads: 1, HeadDim: 64, N: 17, Pos0: 5},
		ledger.Shape{Heads: 4, KVHeads: 2, HeadDim: 128, N: 33},
		ledger.Shape{Heads: 2, KVHeads: 2, HeadDim: 64, N: 2, Pos0: 31},
		ledger.Shape{Heads: 6, KVHeads: 2, HeadDim: 128, N: 40, Pos0: 100},
	)
	if len(shapes) < 6 {
		t.Fatalf("only %d shapes for the tile programs", len(shapes))
	}
	return shapes
}

// checkAttnTiles gates the driver on tiles, single or split, at every
// tile shape and returns the worst NMSE: at the bf16 class's thresholds,
// or with every operand split (splitAll) at float32's.
func checkAttnTiles(t *testing.T, name string, tiles attnTiles, split attnSplit, maxN int) (worst float64) {
	op, _ := ledger.LookupOp(ledger.OpAttentionBatch)
	prec := ledger.PrecisionBF16
	if split == splitAll {
		prec = ""
	}
	for _, s := range attnTileShapes(t, maxN) {
		t.Run(fmt.Sprintf("%s/split=%d/%s", name, split, s.Key(ledger.KindAttentionBatch)), func(t *testing.T) {
			c := newCase(t, op, s, 3)
			v := ledger.Variant{Op: op.Name, Name: name, Family: ledger.FamilyAMXBF16, Precision: prec,
				Impl: ledger.AttentionBatch(func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
					attentionTiles(tiles, split, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
				})}
			m := mustPass(t, c, v)
			t.Logf("NMSE %.2g, max abs %.2g", m.NMSE, m.MaxAbs)
			worst = max(worst, m.NMSE)
		})
	}
	return worst
}

// TestAttentionTilesEmulated checks the driver, the panels and the
// converters with the tile programs emulated, on any AVX-512 machine.
func TestAttentionTilesEmulated(t *testing.T) {
	needAVX512(t)
	single := checkAttnTiles(t, "emulated", emulatedAttnTiles, splitNone, 64)
	split := checkAttnTiles(t, "emulated", emulatedAttnTiles, splitScores, 64)
	all := checkAttnTiles(t, "emulated", emulatedAttnTiles, splitAll, 64)
	t.Logf("worst NMSE: single bf16 %.2g, split scores %.2g, all split %.2g", single, split, all)
	if !(split < 0.75*single) {
		t.Errorf("split scores (worst NMSE %.2g) no better than single bf16 (%.2g)", split, single)
	}
	if !(all < 0.01*split) {
		t.Errorf("every operand split (worst NMSE %.2g) not a hundredth of split scores' (%.2g)", all, split)
	}
}

// TestAttentionTilesMatchBF16Cache checks that the tile driver (programs
// emulated) computes llama.cpp's bf16-cache arithmetic, which
// naive.AttentionBatchBF16 spells out in scalar Go: over keys and values
// already in bf16 the two differ by float32 summation order and the odd
// probability rounded the other way, far below what a missing or misplaced
// rounding (the scale before the query's rounding, say) makes.
func TestAttentionTilesMatchBF16Cache(t *testing.T) {
	needAVX512(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range attnTileShapes(t, 64) {
		t.Run(s.Key(ledger.KindAttentionBatch), func(t *testing.T) {
			ld, nPos := s.Heads*s.HeadDim, s.Pos0+s.N
			q := make([]float32, s.N*ld)
			k := make([]float32, nPos*s.KVHeads*s.HeadDim)
			v := make([]float32, len(k))
			for _, x := range [][]float32{q, k, v} {
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
			}
			for i := range k {
				k[i], v[i] = float32(bf16Float(bf16RNE(k[i]))), float32(bf16Float(bf16RNE(v[i])))
			}
			scale := float32(1 / math.Sqrt(float64(s.HeadDim)))
			got, want := make([]float32, len(q)), make([]float32, len(q))
			attentionTiles(emulatedAttnTiles, splitNone, got, q, ld, k, v, s.N, s.Heads, s.KVHeads, s.HeadDim, s.Pos0, scale)
			naive.AttentionBatchBF16(want, q, ld, k, v, s.N, s.Heads, s.KVHeads, s.HeadDim, s.Pos0, scale)
			var se, rr float64
			for i, w := range want {
				d := float64(got[i] - w)
				se, rr = se+d*d, rr+float64(w)*float64(w)
			}
			if se/rr > 1e-9 {
				t.Errorf("NMSE %.3g against naive-bf16, want ≤ 1e-9", se/rr)
			}
		})
	}
}

// TestAttentionBatchBF16AMX runs the variant itself (AMX tiles, and its
// avx512-bf16 fallback for the shapes they do not take) through the bf16
// kernel harness against naive-bf16.
func TestAttentionBatchBF16AMX(t *testing.T) {
	if err := cpufeat.AMX(); err != nil || !cpufeat.Has("amx-bf16") {
		t.Skipf("no AMX-BF16 here (%v)", err)
	}
	ledgertest.AttentionBatchBF16(t, AttentionBatchBF16, naive.AttentionBatchBF16)
}

// TestAttentionTilesAMX checks the AMX tile programs: each against its
// emulation on the same panels, then the whole variant through the gate.
func TestAttentionTilesAMX(t *testing.T) {
	if err := cpufeat.AMX(); err != nil || !cpufeat.Has("amx-bf16") {
		t.Skipf("no AMX-BF16 here (%v)", err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, hd := range []int{64, 128} {
		for _, c := range []struct{ steps, qk int }{{1, hd}, {2, hd}, {5, hd}, {1, 3 * hd}, {3, 3 * hd}} {
			steps, qk := c.steps, c.qk
			t.Run(fmt.Sprintf("hd%d/qk%d/steps%d", hd, qk, steps), func(t *testing.T) {
				npad := steps * attnStep
				bytes := func(n int) []byte {
					b := aligned(nil, n)
					for i := 0; i < n; i += 2 {
						// Random bf16 values in ±[0.5, 2): no overflow, no denormals.
						b[i], b[i+1] = byte(rng.Uint32()), byte(0x3f|rng.Uint32()&0x80)
					}
					return b
				}
				a := attnArgs{q: &bytes(attnRows * qk * 2)[0], qStride: qk * 2, kp: &bytes(npad * qk * 2)[0], vp: &bytes(npad * hd * 2)[0],
					p: &bytes(attnRows * npad * 2)[0], pStride: npad * 2, sStride: npad * 4, steps: steps, ksteps: qk / 32, hd: hd,
					cfg: &tileConfig[0]}
				for _, prog := range []struct {
					name     string
					amx, emu func(*attnArgs)
					size     int
					out      func(*attnArgs, []float32)
				}{
					{"scores", attnScoresAMX, emulateScores, attnRows * npad, func(a *attnArgs, b []float32) { a.s = &b[0] }},
					{"pv", attnPVAMX, emulatePV, attnRows * hd, func(a *attnArgs, b []float32) { a.o = &b[0] }},
				} {
					got, want := make([]float32, prog.size+16), make([]float32, prog.size+16)
					for i := range got {
						got[i], want[i] = -7, -7
					}
					prog.out(&a, got)
					prog.amx(&a)
					prog.out(&a, want)
					prog.emu(&a)
					for i := range got {
						if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*math.Max(1, math.Abs(float64(want[i]))) {
							t.Fatalf("%s[%d] = %g, emulation %g", prog.name, i, got[i], want[i])
						}
					}
				}
			})
		}
	}
	checkAttnTiles(t, "amx", amxAttnTiles, splitNone, math.MaxInt)
	checkAttnTiles(t, "amx", amxAttnTiles, splitScores, math.MaxInt)
	checkAttnTiles(t, "amx", amxAttnTiles, splitAll, math.MaxInt)
}
