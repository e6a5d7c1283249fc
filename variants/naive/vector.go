package naive

import (
	"math"
	"sync"

	"github.com/damascus-llm/damascus/ledger/reference"
)

// RMSNorm sums the squares in float64 as ggml does (ggml_float), then scales
// in float32.
func RMSNorm(dst, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	mean := float32(ss / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = v * scale * weight[i]
	}
}

// SiLUMul computes silu(gate)·up.
func SiLUMul(dst, gate, up []float32) {
	for i, g := range gate {
		dst[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
}

// Softmax subtracts the maximum before exponentiating and sums in float64.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// RoPE rotates pairs (x[2i], x[2i+1]) of each head, or (x[i], x[i+d/2]) in
// the NeoX layout, by the angle whose cosine and sine are cos[i], sin[i]:
// the reference's rotation, in float32.
func RoPE(x []float32, nHeads, headDim int, cos, sin []float32, neox bool) {
	reference.RotateHeads(x, nHeads, headDim, cos, sin, neox)
}

// scores recycles the attention score buffers so a decode step allocates nothing.
var scores = sync.Pool{New: func() any { return new([]float32) }}

// Attention is one query token's grouped-query attention, head by head:
// scores, softmax, weighted sum of values.
func Attention(out, q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) {
	buf := scores.Get().(*[]float32)
	defer scores.Put(buf)
	if cap(*buf) < nCtx {
		*buf = make([]float32, nCtx)
	}
	p := (*buf)[:nCtx]
	group := nHeads / nKVHeads
	stride := nKVHeads * headDim
	for h := range nHeads {
		qh := q[h*headDim : (h+1)*headDim]
		off := (h / group) * headDim
		for t := range nCtx {
			kt := k[t*stride+off : t*stride+off+headDim]
			var s float32
			for i, qv := range qh {
				s += qv * kt[i]
			}
			p[t] = s * scale
		}
		Softmax(p)
		oh := out[h*headDim : (h+1)*headDim]
		clear(oh)
		for t, pt := range p {
			vt := v[t*stride+off : t*stride+off+headDim]
			for i, vv := range vt {
				oh[i] += pt * vv
			}
		}
	}
}

// AttentionBatch is causal attention for a batch of query tokens, token by
// token and head by head: token j's scores against the first pos0+j+1
// cached keys (dot products summed in float64, as ggml's scalar
// ggml_vec_dot_f32 does), their softmax, the weighted sum of the values.
func AttentionBatch(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	attentionBatch(nil, out, q, ld, k, v, nTokens, nHeads, nKVHeads, headDim, pos0, scale)
}

// attentionBatch is AttentionBatch, or with a rounding (to a 16-bit
// cache's type) AttentionBatchBF16 and AttentionBatchF16: each query and
// each probability rounded.
func attentionBatch(round func(float32) float32, out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
	if nTokens <= 0 {
		return
	}
	buf := scores.Get().(*[]float32)
	defer scores.Put(buf)
	n := pos0 + nTokens
	if cap(*buf) < n+headDim {
		*buf = make([]float32, n+headDim)
	}
	rounded := (*buf)[n : n+headDim]
	group, stride := nHeads/nKVHeads, nKVHeads*headDim
	for j := range nTokens {
		p := (*buf)[:pos0+j+1]
		for h := range nHeads {
			qh := q[j*ld+h*headDim : j*ld+(h+1)*headDim]
			if round != nil {
				for i, x := range qh {
					rounded[i] = round(x)
				}
				qh = rounded
			}
			off := (h / group) * headDim
			for t := range p {
				kt := k[t*stride+off : t*stride+off+headDim]
				var s float64
				for i, qv := range qh {
					s += float64(qv * kt[i])
				}
				p[t] = float32(s) * scale
			}
			Softmax(p)
			oh := out[j*ld+h*headDim : j*ld+(h+1)*headDim]
			clear(oh)
			for t, pt := range p {
				if round != nil {
					pt = round(pt)
				}
				vt := v[t*stride+off : t*stride+off+headDim]
				for i, vv := range vt {
					oh[i] += pt * vv
				}
			}
		}
	}
}
