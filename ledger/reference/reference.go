// Package reference computes every ledger op in float64, straight from the
// op's definition and the block formats' layouts. It shares no code with the
// variants or with quant's float32 dequantizers: it is the yardstick
// the gate measures their error against.
package reference

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/damascus-llm/damascus/quant"
)

func half(b []byte) float64 { return float64(quant.FP16ToFloat32(binary.LittleEndian.Uint16(b))) }

func bf16(b []byte) float64 {
	return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
}

func f32(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }

// Decode expands n values of type t stored in src into float64, computing
// each value's formula (scale·quant − min) in float64.
func Decode(t quant.Type, src []byte, n int) ([]float64, error) {
	size, err := quant.RowSize(t, int64(n))
	if err != nil {
		return nil, fmt.Errorf("reference decode: %w", err)
	}
	if int64(len(src)) < size {
		return nil, fmt.Errorf("reference decode %s: %d values need %d bytes, have %d", t, n, size, len(src))
	}
	y := make([]float64, n)
	bs, ts := t.BlockSize(), t.TypeSize()
	for b := range n / bs {
		blk, out := src[b*ts:(b+1)*ts], y[b*bs:(b+1)*bs]
		switch t {
		case quant.F32:
			out[0] = f32(blk)
		case quant.F16:
			out[0] = half(blk)
		case quant.BF16:
			out[0] = bf16(blk)
		case quant.Q8_0:
			d := half(blk)
			for j := range 32 {
				out[j] = d * float64(int8(blk[2+j]))
			}
		case quant.Q4_0:
			d := half(blk)
			for j := range 16 {
				out[j] = d * float64(int(blk[2+j]&0x0f)-8)
				out[j+16] = d * float64(int(blk[2+j]>>4)-8)
			}
		case quant.Q8_K:
			d := f32(blk)
			for j := range quant.QK_K {
				out[j] = d * float64(int8(blk[4+j]))
			}
		case quant.Q4_K:
			decodeQ4K(blk, out)
		case quant.Q5_K:
			decodeQ5K(blk, out)
		case quant.Q6_K:
			decodeQ6K(blk, out)
		default:
			return nil, fmt.Errorf("reference decode: type %s not supported", t)
		}
	}
	return y, nil
}

// decodeQ4K: d, dmin (f16), twelve bytes packing eight 6-bit scales and
// eight 6-bit mins, 128 bytes of nibbles. Sub-block j (32 values) is stored
// in the low (even j) or high (odd j) nibbles of bytes 32·(j/2)…+31; its
// values are d·sc_j·q − dmin·m_j.
func decodeQ4K(blk []byte, out []float64) { decodeK4(blk, out, 16, -1) }

// decodeK4 decodes a Q4_K-style block: d, dmin, scales, the nibbles at qs;
// qh >= 0 is the offset of Q5_K's fifth bits (bit j of qh[l] for value l
// of sub-block j).
func decodeK4(blk []byte, out []float64, qs, qh int) {
	d, dmin := half(blk), half(blk[2:])
	for j := range 8 {
		sc, m := scaleMinK4(blk[4:16], j)
		for l := range 32 {
			q := blk[qs+32*(j/2)+l]
			if j%2 == 1 {
				q >>= 4
			}
			v := int(q & 0x0f)
			if qh >= 0 {
				v |= int(blk[qh+l]>>j&1) << 4
			}
			out[32*j+l] = d*float64(sc)*float64(v) - dmin*float64(m)
		}
	}
}

// scaleMinK4 unpacks sub-block j's 6-bit scale and min from the twelve
// scale bytes s of a Q4_K or Q5_K block.
func scaleMinK4(s []byte, j int) (sc, m int) {
	if j < 4 {
		return int(s[j] & 63), int(s[j+4] & 63)
	}
	return int(s[j+4]&0x0f) | int(s[j-4]>>6)<<4, int(s[j+4]>>4) | int(s[j]>>6)<<4
}

// decodeQ5K: Q4_K's d, dmin and scales, then qh[32] (the fifth bits)
// before the 128 bytes of nibbles. Value l of sub-block j takes bit j of
// qh[l] as its fifth bit: d·sc_j·(q + 16·bit) − dmin·m_j.
func decodeQ5K(blk []byte, out []float64) { decodeK4(blk, out, 48, 16) }

// decodeQ6K: ql[128] low nibbles, qh[64] high bit pairs, 16 int8 scales, d
// (f16). Value i of half n (128 values): i = 128n + 32t + l (t < 4, l < 32)
// takes the low (t even) or high (t odd) nibble of ql[64n + l + 32·(t%2)]
// and bits 2t…2t+1 of qh[32n + l]; it is d·sc[i/16]·(q − 32).
func decodeQ6K(blk []byte, out []float64) {
	d := half(blk[208:])
	for i := range quant.QK_K {
		n, t, l := i/128, (i%128)/32, i%32
		lo := blk[64*n+l+32*(t%2)]
		if t >= 2 {
			lo >>= 4
		}
		hi := blk[128+32*n+l] >> (2 * t) & 3
		q := int(lo&0x0f|hi<<4) - 32
		out[i] = d * float64(int8(blk[192+i/16])) * float64(q)
	}
}

// Dot is Σ a·b in float64.
func Dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// RMSNorm: x/sqrt(mean(x²)+eps)·w.
func RMSNorm(x, w []float32, eps float32) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v) * scale * float64(w[i])
	}
	return y
}

// SiLUMul: gate/(1+e^−gate)·up.
func SiLUMul(gate, up []float32) []float64 {
	y := make([]float64, len(gate))
	for i, g := range gate {
		y[i] = float64(g) / (1 + math.Exp(-float64(g))) * float64(up[i])
	}
	return y
}

// Softmax of x.
func Softmax(x []float64) []float64 {
	y := make([]float64, len(x))
	if len(x) == 0 {
		return y
	}
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	var sum float64
	for i, v := range x {
		y[i] = math.Exp(v - m)
		sum += y[i]
	}
	for i := range y {
		y[i] /= sum
	}
	return y
}

// RoPE rotates each head's pairs — (2i, 2i+1), or (i, i+d/2) for NeoX — by
// the angle with cosine cos[i] and sine sin[i].
func RoPE(x []float32, nHeads, headDim int, cos, sin []float32, neox bool) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	RotateHeads(y, nHeads, headDim, cos, sin, neox)
	return y
}

// RotateHeads is RoPE's rotation in x's own precision, in place: this
// package's RoPE runs it in float64, the naive kernel in float32.
func RotateHeads[T float32 | float64](x []T, nHeads, headDim int, cos, sin []float32, neox bool) {
	half := headDim / 2
	for h := range nHeads {
		head := x[h*headDim : (h+1)*headDim]
		for i := range half {
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			c, s := T(cos[i]), T(sin[i])
			x0, x1 := head[a], head[b]
			head[a] = x0*c - x1*s
			head[b] = x0*s + x1*c
		}
	}
}

// Attention: for each query head h (kv head h/(nHeads/nKVHeads)),
// softmax(scale·q_h·K_t) over t, weighted sum of V_t.
func Attention(q, k, v []float32, nHeads, nKVHeads, headDim, nCtx int, scale float32) []float64 {
	out := make([]float64, nHeads*headDim)
	group, stride := nHeads/nKVHeads, nKVHeads*headDim
	s := make([]float64, nCtx)
	for h := range nHeads {
		off := (h / group) * headDim
		for t := range nCtx {
			var dot float64
			for i := range headDim {
				dot += float64(q[h*headDim+i]) * float64(k[t*stride+off+i])
			}
			s[t] = dot * float64(scale)
		}
		p := Softmax(s)
		for t := range nCtx {
			for i := range headDim {
				out[h*headDim+i] += p[t] * float64(v[t*stride+off+i])
			}
		}
	}
	return out
}

// AttentionBatch: causal attention of nTokens query tokens at positions
// pos0 … pos0+nTokens-1, token j's query at q[j*ld:], over the cached
// positions t ≤ pos0+j. It returns the outputs densely, nTokens rows of
// nHeads×headDim.
func AttentionBatch(q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) []float64 {
	width := nHeads * headDim
	out := make([]float64, 0, nTokens*width)
	for j := range nTokens {
		out = append(out, Attention(q[j*ld:j*ld+width], k, v, nHeads, nKVHeads, headDim, pos0+j+1, scale)...)
	}
	return out
}
