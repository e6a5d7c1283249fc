//go:build amd64 && !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/quant"
	"math"
	"testing"

	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

func BenchmarkAttention(b *testing.B) {
	need(b, "avx512f", "avx512vl")
	ledgertest.BenchAttention(b, "avx512", Attention)
	ledgertest.BenchAttention(b, "avx512-gqa", AttentionGQA)
	ledgertest.BenchAttention(b, "avx512-gqa-4x4", AttentionGQA4x4)
	ledgertest.BenchAttention(b, "avx512-gqa-prefetch", AttentionGQAPrefetch)
}

// AttentionBatch's twins (each checked against the reference by the
// conformance suite, as every variant) give its bits (the same FMAs in the
// same order): AttentionBatchWS over head sizes that take its 8×32 pass
// (multiples of 32) and some that do not, the S32 forms over pairs of full
// blocks and the single blocks around them (the first sixteen rows of a
// sequence see fewer than eight positions), head sizes with an odd tail of
// elements (not a multiple of 4), tokens filling blocks and not, with
// guards around the output and NaN in its gaps.
func TestAttentionBatchTwins(t *testing.T) {
	need(t, "avx512f", "avx512vl")
	r := ledgertest.NewRand(5)
	twins := []struct {
		name string
		f    func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32)
	}{{"avx512-ws8x2", AttentionBatchWS}, {"avx512-s32", AttentionBatchS32}, {"avx512-ws8x2-s32", AttentionBatchWSS32}}
	for _, c := range []struct{ heads, kvHeads, headDim, tokens, pos0, gap int }{
		{3, 1, 128, 11, 250, 0}, {4, 1, 64, 13, 300, 3}, {8, 2, 32, 9, 17, 0}, {6, 3, 96, 21, 0, 5},
		{4, 2, 160, 7, 40, 1}, {24, 8, 128, 17, 100, 0}, {2, 1, 48, 5, 9, 0},
		{3, 1, 128, 40, 0, 0}, {4, 1, 64, 37, 1, 2}, {3, 1, 66, 29, 5, 0}, {4, 2, 67, 33, 2, 1},
		{3, 1, 128, 64, 960, 0}, {1, 1, 64, 70, 3, 0},
	} {
		width, stride := c.heads*c.headDim, c.kvHeads*c.headDim
		ld, nPos := width+c.gap, c.pos0+c.tokens
		q := ledgertest.Floats(r, (c.tokens-1)*ld+width)
		k, v := ledgertest.Floats(r, nPos*stride), ledgertest.Floats(r, nPos*stride)
		wantBuf, want := ledgertest.Guarded((c.tokens-1)*ld + width)
		scale := float32(1 / math.Sqrt(float64(c.headDim)))
		AttentionBatch(want, q, ld, k, v, c.tokens, c.heads, c.kvHeads, c.headDim, c.pos0, scale)
		for _, tw := range twins {
			gotBuf, got := ledgertest.Guarded((c.tokens-1)*ld + width)
			tw.f(got, q, ld, k, v, c.tokens, c.heads, c.kvHeads, c.headDim, c.pos0, scale)
			ledgertest.CheckGuards(t, gotBuf)
			for i := range gotBuf {
				if math.Float32bits(gotBuf[i]) != math.Float32bits(wantBuf[i]) {
					t.Fatalf("%s %+v: element %d is %v, AttentionBatch's %v", tw.name, c, i, gotBuf[i], wantBuf[i])
				}
			}
		}
	}
}

// attnbScores32 gives two attnbScores16 calls' scores bit for bit, for
// every n from 8 (a last group short of four moved back) and head sizes
// with and without an odd tail, writing nothing past n positions.
func TestAttnbScores32(t *testing.T) {
	need(t, "avx512f", "avx512vl")
	r := ledgertest.NewRand(9)
	for _, hd := range []int{64, 66, 67, 128, 5} {
		const stride = 3 // rows of the key buffer between positions, in head sizes
		for n := 8; n <= 27; n++ {
			k := ledgertest.Floats(r, n*stride*hd)
			qt0, qt1 := ledgertest.Floats(r, attnbRows*hd), ledgertest.Floats(r, attnbRows*hd)
			want0, want1 := make([]float32, (n+1)*attnbRows), make([]float32, (n+1)*attnbRows)
			got0, got1 := make([]float32, (n+1)*attnbRows), make([]float32, (n+1)*attnbRows)
			for i := n * attnbRows; i < len(got0); i++ {
				got0[i], got1[i] = -7.25, -7.25
				want0[i], want1[i] = -7.25, -7.25
			}
			attnbScores16(&want0[0], &qt0[0], &k[0], 4*stride*hd, hd, n)
			attnbScores16(&want1[0], &qt1[0], &k[0], 4*stride*hd, hd, n)
			attnbScores32(&got0[0], &got1[0], &qt0[0], &qt1[0], &k[0], 4*stride*hd, hd, n)
			for i := range got0 {
				if math.Float32bits(got0[i]) != math.Float32bits(want0[i]) || math.Float32bits(got1[i]) != math.Float32bits(want1[i]) {
					t.Fatalf("hd %d n %d: score %d (position %d) is %v, %v; attnbScores16's %v, %v",
						hd, n, i, i/attnbRows, got0[i], got1[i], want0[i], want1[i])
				}
			}
		}
	}
}

func BenchmarkAttentionBatch(b *testing.B) {
	need(b, "avx512f", "avx512vl")
	ledgertest.BenchAttentionBatch(b, "avx512", AttentionBatch)
	ledgertest.BenchAttentionBatch(b, "avx512-ws8x2", AttentionBatchWS)
	ledgertest.BenchAttentionBatch(b, "avx512-s32", AttentionBatchS32)
	ledgertest.BenchAttentionBatch(b, "avx512-ws8x2-s32", AttentionBatchWSS32)
	ledgertest.BenchAttentionBatch(b, "per-token-gqa", func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
		w, stride := nHeads*headDim, nKVHeads*headDim
		for j := range nTokens {
			AttentionGQA(out[j*ld:j*ld+w], q[j*ld:j*ld+w], k[:(pos0+j+1)*stride], v, nHeads, nKVHeads, headDim, pos0+j+1, scale)
		}
	})
}

// Decode calls attention with one more position every token: the score
// buffer grows geometrically, so those calls do not allocate.
func TestAttentionGrowingContextDoesNotAllocate(t *testing.T) {
	need(t, "avx512f", "avx512vl")
	const heads, kvHeads, headDim, maxCtx = 4, 1, 64, 200
	r := ledgertest.NewRand(3)
	q, k, v := ledgertest.Floats(r, heads*headDim), ledgertest.Floats(r, maxCtx*headDim), ledgertest.Floats(r, maxCtx*headDim)
	out := make([]float32, heads*headDim)
	for _, f := range []struct {
		name string
		f    ledgertest.AttentionFunc
	}{{"avx512", Attention}, {"avx512-gqa", AttentionGQA}, {"avx512-gqa-4x4", AttentionGQA4x4}} {
		ctx := 1
		f.f(out, q, k, v, heads, kvHeads, headDim, ctx, 0.125)
		allocs := testing.AllocsPerRun(maxCtx-2, func() {
			ctx++
			f.f(out, q, k, v, heads, kvHeads, headDim, ctx, 0.125)
		})
		if allocs != 0 {
			t.Errorf("%s: %.2f allocations per call", f.name, allocs)
		}
	}
}

// TestAttnbScaleRound checks the bf16 blocks' two passes against Go on 1-9
// position vectors with a guard vector after them, ties included.
func TestAttnbScaleRound(t *testing.T) {
	need(t, "avx512f", "avx512vl")
	const guard = float32(-7.25)
	for n := 1; n <= 9; n++ {
		s := make([]float32, (n+1)*attnbRows)
		for i := range s {
			s[i] = float32(i%37) * 0.1234567
			if i%5 == 0 { // a tie: exactly halfway between two bf16 values
				s[i] = math.Float32frombits(0x3f808000 + uint32(i%2)<<16)
			}
		}
		for i := n * attnbRows; i < len(s); i++ {
			s[i] = guard
		}
		want := append([]float32(nil), s...)
		var inv [attnbRows]float32
		for l := range inv {
			inv[l] = 1 / float32(l+1)
		}
		attnbScale16(&s[0], n, 0.5)
		attnbRoundP16(&s[0], n, &inv[0])
		for i := range want[:n*attnbRows] {
			want[i] = quant.RoundBF16(want[i] * 0.5 * inv[i%attnbRows])
		}
		for i := range s {
			if math.Float32bits(s[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: s[%d] = %v, want %v", n, i, s[i], want[i])
			}
		}
	}
}

// BenchmarkAttnbParts times the blocks' passes apart, in cache (one KV
// head's 1024 positions of head size 128, contiguous as the engine's cache
// holds them): the scores of 32 rows as two attnbScores16 calls and as one
// attnbScores32, a 16-row softmax, and both passes over the values. On the
// AMD dev VM the score and value passes run at the FMA probe's 116
// GFLOP/s; on the Intel host the whole op reached a quarter of its probe.
func BenchmarkAttnbParts(b *testing.B) {
	need(b, "avx512f", "avx512vl")
	const hd, n = 128, 1024
	stride := hd * 4 // bytes between positions
	r := ledgertest.NewRand(3)
	k, v := ledgertest.Floats(r, n*hd), ledgertest.Floats(r, n*hd)
	qt := ledgertest.Floats(r, 2*attnbRows*hd)
	s := make([]float32, 2*attnbRows*n)
	o := make([]float32, attnbRows*hd)
	var inv [attnbRows]float32
	gflops := func(b *testing.B, rows int) {
		b.ReportMetric(float64(b.N)*float64(rows*n*hd*2)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
	b.Run("part=scores16x2", func(b *testing.B) {
		for range b.N {
			attnbScores16(&s[0], &qt[0], &k[0], stride, hd, n)
			attnbScores16(&s[attnbRows*n], &qt[attnbRows*hd], &k[0], stride, hd, n)
		}
		gflops(b, 2*attnbRows)
	})
	b.Run("part=scores32", func(b *testing.B) {
		for range b.N {
			attnbScores32(&s[0], &s[attnbRows*n], &qt[0], &qt[attnbRows*hd], &k[0], stride, hd, n)
		}
		gflops(b, 2*attnbRows)
	})
	b.Run("part=softmax16", func(b *testing.B) {
		for range b.N {
			attnbSoftmax16(&s[0], n, &inv[0])
		}
	})
	for _, ws := range []struct {
		name string
		f    weightedSum
	}{{"ws16", attnbWeightedSum16}, {"ws8x2", attnbWeightedSum8x2}} {
		b.Run("part="+ws.name, func(b *testing.B) {
			for range b.N {
				ws.f(&o[0], &s[0], &v[0], stride, hd, n, &inv[0])
			}
			gflops(b, attnbRows)
		})
	}
}
