package gounrolled

import "math"

// RMSNorm sets dst[i] = x[i] / sqrt(mean(x²)+eps) * weight[i]. The sum of
// squares is kept in float64, as ggml does.
func RMSNorm(dst, x, weight []float32, eps float32) {
	n := len(x)
	x, weight, dst = x[:n:n], weight[:n:n], dst[:n:n]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += float64(x[i] * x[i])
		s1 += float64(x[i+1] * x[i+1])
		s2 += float64(x[i+2] * x[i+2])
		s3 += float64(x[i+3] * x[i+3])
	}
	for ; i < n; i++ {
		s0 += float64(x[i] * x[i])
	}
	mean := float32((s0 + s1 + s2 + s3) / float64(n))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i := range x {
		dst[i] = x[i] * scale * weight[i]
	}
}

// SiLUMul sets dst[i] = silu(gate[i]) * up[i], with a float32 exp.
func SiLUMul(dst, gate, up []float32) {
	n := len(dst)
	gate, up = gate[:n:n], up[:n:n]
	for i, g := range gate {
		dst[i] = g / (1 + expf(-g)) * up[i]
	}
}

// Softmax replaces x by softmax(x), subtracting the maximum first; float32
// exp, float64 sum.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	max := x[0]
	for _, v := range x[1:] {
		if v > max {
			max = v
		}
	}
	var sum float64
	for i, v := range x {
		e := expf(v - max)
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// RoPE rotates each head of x in place: pairs (2i, 2i+1), or (i, i+headDim/2)
// in the NeoX layout, turn by the angle whose cosine and sine are cos[i], sin[i].
func RoPE(x []float32, nHeads, headDim int, cos, sin []float32, neox bool) {
	half := headDim / 2
	cos, sin = cos[:half:half], sin[:half:half]
	for h := 0; h < nHeads; h++ {
		head := x[h*headDim : (h+1)*headDim : (h+1)*headDim]
		if neox {
			lo, hi := head[:half:half], head[half:headDim:headDim]
			for i, c := range cos {
				s := sin[i]
				a, b := lo[i], hi[i]
				lo[i] = a*c - b*s
				hi[i] = a*s + b*c
			}
			continue
		}
		for i, c := range cos {
			s := sin[i]
			a, b := head[2*i], head[2*i+1]
			head[2*i] = a*c - b*s
			head[2*i+1] = a*s + b*c
		}
	}
}
