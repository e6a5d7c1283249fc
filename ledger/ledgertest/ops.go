package ledgertest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/damascus-llm/damascus/ledger/reference"
)

// Lengths are the vector lengths the fp32 ops are tested at: every SIMD tail
// and the real model widths.
var Lengths = []int{1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 128, 129, 255, 512, 2048, 3072, 8192}

// OpTolerance is the relative error allowed to the fp32 ops against float64:
// a few float32 roundings per value, plus an exp approximation's error.
const OpTolerance = 1e-6

// guardedCopy returns a guarded buffer holding x in its middle.
func guardedCopy(x []float32) (buf, mid []float32) {
	buf, mid = Guarded(len(x))
	copy(mid, x)
	return buf, mid
}

func checkVec(t *testing.T, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range got {
		w := want[i]
		if math.Abs(float64(got[i])-w) > tol*math.Max(math.Abs(w), 1e-30) {
			t.Fatalf("%s: [%d] = %v, want %v (rel %.3g, tolerance %.3g)", name, i, got[i], w,
				math.Abs(float64(got[i])-w)/math.Abs(w), tol)
		}
	}
}

// RMSNorm checks f against float64 over Lengths, with guards and in-place use.
func RMSNorm(t *testing.T, f func(dst, x, weight []float32, eps float32)) {
	r := NewRand(11)
	for _, n := range Lengths {
		x, w := Floats(r, n), Floats(r, n)
		const eps = 1e-5
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		scale := 1 / math.Sqrt(ss/float64(n)+eps)
		want := make([]float64, n)
		for i := range x {
			want[i] = float64(x[i]) * scale * float64(w[i])
		}
		buf, dst := Guarded(n)
		f(dst, x, w, eps)
		CheckGuards(t, buf)
		checkVec(t, fmt.Sprintf("n=%d", n), dst, want, OpTolerance)
		ibuf, inplace := guardedCopy(x)
		f(inplace, inplace, w, eps)
		CheckGuards(t, ibuf)
		checkVec(t, fmt.Sprintf("n=%d in place", n), inplace, want, OpTolerance)
	}
}

// SiLUMul checks f against float64, including large-magnitude gates where
// e^-v overflows.
func SiLUMul(t *testing.T, f func(dst, gate, up []float32)) {
	r := NewRand(12)
	for _, n := range Lengths {
		g, u := Floats(r, n), Floats(r, n)
		for i := range g {
			switch i % 17 {
			case 3:
				g[i] = -100 - float32(i)
			case 5:
				g[i] = 100 + float32(i)
			case 7:
				g[i] *= 10
			}
		}
		want := reference.SiLUMul(g, u)
		buf, dst := Guarded(n)
		f(dst, g, u)
		CheckGuards(t, buf)
		checkVecAbs(t, fmt.Sprintf("n=%d", n), dst, want, OpTolerance)
		gbuf, inplace := guardedCopy(g)
		f(inplace, inplace, u)
		CheckGuards(t, gbuf)
		checkVecAbs(t, fmt.Sprintf("n=%d in place", n), inplace, want, OpTolerance)
	}
}

// checkVecAbs allows an absolute floor for values that underflow toward zero.
func checkVecAbs(t *testing.T, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range got {
		w := want[i]
		if math.Abs(float64(got[i])-w) > tol*math.Abs(w)+1e-37 {
			t.Fatalf("%s: [%d] = %v, want %v (tolerance %.3g)", name, i, got[i], w, tol)
		}
	}
}

// Softmax checks f against float64 on scores spread like attention logits,
// including very negative ones (masked positions) and ties at the maximum.
func Softmax(t *testing.T, f func(x []float32)) {
	r := NewRand(13)
	for _, n := range Lengths {
		x := Floats(r, n)
		for i := range x {
			x[i] *= 4
			if i%11 == 4 {
				x[i] = -1e30
			}
		}
		if n > 3 {
			x[n-1] = x[0]
		}
		x64 := make([]float64, n)
		for i, v := range x {
			x64[i] = float64(v)
		}
		want, max := reference.Softmax(x64), slices.Max(x64)
		buf, mid := guardedCopy(x)
		f(mid)
		CheckGuards(t, buf)
		for i := range mid {
			// x-max is rounded to float32 before exp: its error scales e^(x-max).
			tol := OpTolerance + math.Abs(float64(x[i])-max)*0x1p-23
			if d := math.Abs(float64(mid[i]) - want[i]); d > tol*want[i]+1e-37 {
				t.Fatalf("n=%d: [%d] = %v, want %v (rel %.3g, tolerance %.3g)", n, i, mid[i], want[i], d/want[i], tol)
			}
		}
		softmaxKeepsNaN(t, f, x)
	}
}

// softmaxKeepsNaN: a NaN score (damaged weights upstream) must come out
// NaN, never as a finite probability that hides it (an exp whose clamp
// turns NaN into its bound did: the engine's check of the logits then saw
// nothing wrong).
func softmaxKeepsNaN(t *testing.T, f func(x []float32), x []float32) {
	t.Helper()
	for _, at := range []int{0, len(x) / 2, len(x) - 1} {
		y := slices.Clone(x)
		y[at] = float32(math.NaN())
		f(y)
		if !math.IsNaN(float64(y[at])) {
			t.Fatalf("n=%d: a NaN score at %d came out %v, want NaN", len(x), at, y[at])
		}
	}
}

// RoPE checks f against float64 for both layouts and the real head sizes.
func RoPE(t *testing.T, f func(x []float32, nHeads, headDim int, cos, sin []float32, neox bool)) {
	r := NewRand(14)
	for _, hd := range []int{2, 4, 6, 8, 16, 18, 32, 64, 128} {
		for _, nh := range []int{1, 3, 8, 24, 32} {
			for _, neox := range []bool{false, true} {
				x := Floats(r, nh*hd)
				cos, sin := make([]float32, hd/2), make([]float32, hd/2)
				for i := range cos {
					a := r.Float64() * 2 * math.Pi * 100
					cos[i], sin[i] = float32(math.Cos(a)), float32(math.Sin(a))
				}
				want := make([]float64, len(x))
				for h := 0; h < nh; h++ {
					for i := 0; i < hd/2; i++ {
						a, b := h*hd+2*i, h*hd+2*i+1
						if neox {
							a, b = h*hd+i, h*hd+i+hd/2
						}
						c, s := float64(cos[i]), float64(sin[i])
						want[a] = float64(x[a])*c - float64(x[b])*s
						want[b] = float64(x[a])*s + float64(x[b])*c
					}
				}
				buf, mid := guardedCopy(x)
				f(mid, nh, hd, cos, sin, neox)
				CheckGuards(t, buf)
				// Rotation outputs can cancel: measure against the pair's norm.
				for i := range mid {
					h, j := i/hd, i%hd
					p := j / 2
					if neox {
						p = j % (hd / 2)
					}
					a, b := h*hd+2*p, h*hd+2*p+1
					if neox {
						a, b = h*hd+p, h*hd+p+hd/2
					}
					norm := math.Hypot(float64(x[a]), float64(x[b]))
					if math.Abs(float64(mid[i])-want[i]) > 4e-7*norm+1e-30 {
						t.Fatalf("hd=%d heads=%d neox=%v: [%d] = %v, want %v", hd, nh, neox, i, mid[i], want[i])
					}
				}
			}
		}
	}
}
