package llama

import (
	"fmt"
	"math"
	"slices"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// Reference is the oracle forward pass: weights dequantized row by row with
// quant, activations stored as float32, every sum (dot products, norms,
// softmax, attention) accumulated in float64 and rounded once. It evaluates
// one token at a time over its own float32 KV cache. It is slow by design.
type Reference struct {
	m    *Model
	nCtx int
	pos  int
	k, v [][]float32 // per layer: nCtx rows of KVDim

	// Capture, when set, is called with each layer's output hidden state
	// (the residual stream after the block) for every token evaluated; the
	// slice is only valid during the call.
	Capture CaptureFunc

	// RoundActivations makes every matrix product see its input rounded
	// through the weight type's activation type (quantized and dequantized,
	// as the production path and llama.cpp feed their kernels), isolating
	// kernel arithmetic from activation quantization in comparisons.
	RoundActivations bool

	// TieWindow, with RoundActivations, makes the reference note the
	// first rounding it takes within TieWindow quantization steps of a
	// tie (quant.RoundingMargin) in FirstTie: there the production path,
	// summing in another order, may round the other way by one ulp, and
	// from there on the two evaluations are no longer comparable bit for
	// bit.
	TieWindow float32
	FirstTie  *RoundingTie

	layer                             int // the layer being evaluated (Layers: the output)
	x, xn, q, att, tmp, gate, up, row []float32
	cos, sin                          []float32
	scores                            []float64
	logits                            []float32
	xr                                []float32
	xq                                []byte
}

// RoundingTie is a rounding of the reference's taken at a tie or near one:
// at position Pos in layer Layer (Config.Layers: the output), the
// activations of Matrix, value Index, Margin quantization steps from a tie.
type RoundingTie struct {
	Pos, Layer int
	Matrix     string
	Index      int
	Margin     float32
}

func (t RoundingTie) String() string {
	return fmt.Sprintf("position %d, layer %d, %s's activation %d %.2g steps from a tie", t.Pos, t.Layer, t.Matrix, t.Index, t.Margin)
}

// CaptureFunc receives a layer's output hidden state for the token at pos.
type CaptureFunc func(layer, pos int, hidden []float32)

// NewReference returns a reference evaluator with room for nCtx positions.
func (m *Model) NewReference(nCtx int) (*Reference, error) {
	c := m.Config
	if nCtx <= 0 {
		return nil, fmt.Errorf("context length %d is not positive", nCtx)
	}
	r := &Reference{m: m, nCtx: nCtx,
		x: make([]float32, c.Dim), xn: make([]float32, c.Dim), q: make([]float32, c.QDim()),
		att: make([]float32, c.QDim()), tmp: make([]float32, max(c.Dim, c.KVDim())),
		gate: make([]float32, c.FFNDim), up: make([]float32, c.FFNDim),
		row: make([]float32, max(c.Dim, c.FFNDim, c.QDim())),
		cos: make([]float32, c.HeadDim/2), sin: make([]float32, c.HeadDim/2),
		scores: make([]float64, nCtx), logits: make([]float32, c.Vocab)}
	r.k = make([][]float32, c.Layers)
	r.v = make([][]float32, c.Layers)
	for l := range r.k {
		r.k[l] = make([]float32, nCtx*c.KVDim())
		r.v[l] = make([]float32, nCtx*c.KVDim())
	}
	return r, nil
}

// Pos is the number of positions evaluated so far.
func (r *Reference) Pos() int { return r.pos }

// Reset empties the KV cache.
func (r *Reference) Reset() { r.pos = 0 }

// Eval runs token at the next position and returns the logits (Vocab values,
// valid until the next call).
func (r *Reference) Eval(token int32) ([]float32, error) {
	m, c := r.m, r.m.Config
	if token < 0 || int(token) >= c.Vocab {
		return nil, fmt.Errorf("token %d is outside the vocabulary of %d", token, c.Vocab)
	}
	if r.pos >= r.nCtx {
		return nil, fmt.Errorf("context of %d positions is full", r.nCtx)
	}
	pos := r.pos
	if err := m.Embed.DequantizeRow(r.x, int(token)); err != nil {
		return nil, err
	}
	m.ropeAngles(r.cos, r.sin, pos)
	kvd, hd := c.KVDim(), c.HeadDim
	group := c.Heads / c.KVHeads
	scale := 1 / math.Sqrt(float64(hd))
	for l := range m.Layers {
		L := &m.Layers[l]
		r.layer = l
		refRMSNorm(r.xn, r.x, L.AttnNorm, c.RMSEps)
		kRow := r.k[l][pos*kvd : (pos+1)*kvd]
		vRow := r.v[l][pos*kvd : (pos+1)*kvd]
		for _, mv := range []struct {
			w   *Matrix
			dst []float32
		}{{&L.Q, r.q}, {&L.K, kRow}, {&L.V, vRow}} {
			if err := r.matVec(mv.dst, mv.w, r.xn); err != nil {
				return nil, err
			}
		}
		refRoPE(r.q, hd, r.cos, r.sin)
		refRoPE(kRow, hd, r.cos, r.sin)

		for h := range c.Heads {
			kvh := h / group
			q := r.q[h*hd : (h+1)*hd]
			scores := r.scores[:pos+1]
			maxs := math.Inf(-1)
			for t := range scores {
				k := r.k[l][t*kvd+kvh*hd : t*kvd+(kvh+1)*hd]
				var s float64
				for i := range q {
					s += float64(q[i]) * float64(k[i])
				}
				scores[t] = s * scale
				maxs = max(maxs, scores[t])
			}
			var sum float64
			for t := range scores {
				scores[t] = math.Exp(scores[t] - maxs)
				sum += scores[t]
			}
			out := r.att[h*hd : (h+1)*hd]
			for i := range out {
				var acc float64
				for t := range scores {
					acc += scores[t] * float64(r.v[l][t*kvd+kvh*hd+i])
				}
				out[i] = float32(acc / sum)
			}
		}
		if err := r.matVec(r.tmp[:c.Dim], &L.Out, r.att); err != nil {
			return nil, err
		}
		for i := range r.x {
			r.x[i] += r.tmp[i]
		}

		refRMSNorm(r.xn, r.x, L.FFNNorm, c.RMSEps)
		if err := r.matVec(r.gate, &L.Gate, r.xn); err != nil {
			return nil, err
		}
		if err := r.matVec(r.up, &L.Up, r.xn); err != nil {
			return nil, err
		}
		for i, g := range r.gate {
			gd := float64(g)
			r.gate[i] = float32(gd / (1 + math.Exp(-gd)) * float64(r.up[i]))
		}
		if err := r.matVec(r.tmp[:c.Dim], &L.Down, r.gate); err != nil {
			return nil, err
		}
		for i := range r.x {
			r.x[i] += r.tmp[i]
		}
		if r.Capture != nil {
			r.Capture(l, pos, r.x)
		}
	}
	refRMSNorm(r.xn, r.x, m.Norm, c.RMSEps)
	r.layer = c.Layers
	if err := r.matVec(r.logits, &m.Output, r.xn); err != nil {
		return nil, err
	}
	r.pos++
	return r.logits, nil
}

// matVec computes dst = W·x with each row dequantized and a float64 sum.
func (r *Reference) matVec(dst []float32, w *Matrix, x []float32) error {
	if at := ledger.ActivationType(w.Type); r.RoundActivations && at != quant.F32 {
		rs, err := quant.RowSize(at, int64(len(x)))
		if err != nil {
			return fmt.Errorf("%s: %w", w.Name, err)
		}
		r.xq = slices.Grow(r.xq[:0], int(rs))[:rs]
		r.xr = slices.Grow(r.xr[:0], len(x))[:len(x)]
		if err := quant.Quantize(at, x, r.xq); err != nil {
			return fmt.Errorf("%s: activations to %s: %w", w.Name, at, err)
		}
		if err := quant.Dequantize(at, r.xq, r.xr); err != nil {
			return fmt.Errorf("%s: activations from %s: %w", w.Name, at, err)
		}
		if r.TieWindow > 0 && r.FirstTie == nil {
			if m, i, ok := quant.RoundingMargin(at, x); ok && m <= r.TieWindow {
				r.FirstTie = &RoundingTie{Pos: r.pos, Layer: r.layer, Matrix: w.Name, Index: i, Margin: m}
			}
		}
		x = r.xr
	}
	row := r.row[:w.Cols]
	for i := range w.Rows {
		if err := w.DequantizeRow(row, i); err != nil {
			return err
		}
		var s float64
		for j, v := range row {
			s += float64(v) * float64(x[j])
		}
		dst[i] = float32(s)
	}
	return nil
}

func refRMSNorm(dst, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for i, v := range x {
		dst[i] = float32(float64(v) * scale * float64(w[i]))
	}
}

// refRoPE rotates adjacent pairs of every head of x.
func refRoPE(x []float32, headDim int, cos, sin []float32) {
	for h := 0; h < len(x); h += headDim {
		for i := range headDim / 2 {
			a, b := float64(x[h+2*i]), float64(x[h+2*i+1])
			c, s := float64(cos[i]), float64(sin[i])
			x[h+2*i] = float32(a*c - b*s)
			x[h+2*i+1] = float32(a*s + b*c)
		}
	}
}
