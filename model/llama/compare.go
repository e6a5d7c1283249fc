package llama

import (
	"fmt"
	"math"
)

// LayerDiff compares one layer's output hidden states of the production path
// with the reference over every position evaluated.
type LayerDiff struct {
	Layer     int     // Config.Layers for the logits
	Cosine    float64 // smallest per-position cosine similarity
	MaxAbs    float64 // largest absolute difference
	RelRMS    float64 // largest per-position ‖a−b‖/‖b‖
	Positions int     // positions compared
}

func (d LayerDiff) String() string {
	return fmt.Sprintf("layer %2d: cos %.8f  max-abs %.3g  rel-rms %.3g  over %d positions", d.Layer, d.Cosine, d.MaxAbs, d.RelRMS, d.Positions)
}

// CompareLayers evaluates tokens with the production path (opts, as one
// batched Eval) and with the reference, and compares every layer's output
// and the final logits, position by position.
// With roundActivations the reference rounds activations as the kernels'
// inputs are rounded, so only kernel arithmetic remains to differ — until
// the reference rounds a value within TieWindow steps of a tie, which the
// production path, an ulp away, may round the other way: the comparison
// stops there (that layer onwards at that position, every later position)
// and the tie is returned; LayerDiff.Positions counts what was compared.
func (m *Model) CompareLayers(tokens []int32, opts Options, roundActivations bool) ([]LayerDiff, *RoundingTie, error) {
	L, dim := m.Config.Layers, m.Config.Dim
	type key struct{ layer, pos int }
	prod := map[key][]float32{}
	opts.Capture = func(layer, pos int, h []float32) { prod[key{layer, pos}] = append([]float32(nil), h...) }
	if opts.NCtx == 0 {
		opts.NCtx = len(tokens)
	}
	c, err := m.NewContext(opts)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	pl, err := c.Eval(tokens, true)
	if err != nil {
		return nil, nil, err
	}
	ref, err := m.NewReference(len(tokens))
	if err != nil {
		return nil, nil, err
	}
	ref.RoundActivations = roundActivations
	if roundActivations {
		ref.TieWindow = TieWindow
	}
	diffs := make([]LayerDiff, L+1)
	for i := range diffs {
		diffs[i] = LayerDiff{Layer: i, Cosine: 1}
	}
	ref.Capture = func(layer, pos int, h []float32) {
		if ref.FirstTie == nil {
			diffs[layer].add(prod[key{layer, pos}][:dim], h)
		}
	}
	V := m.Config.Vocab
	for j, t := range tokens {
		rl, err := ref.Eval(t)
		if err != nil {
			return nil, nil, err
		}
		if ref.FirstTie == nil {
			diffs[L].add(pl[j*V:(j+1)*V], rl)
		}
	}
	return diffs, ref.FirstTie, nil
}

// TieWindow is CompareLayers' tie window, in quantization steps: a value
// this near a tie moves across it when its float32 sum, of magnitude up to
// 127 steps, changes by about 2^-22 relative (a few ulps), as a sum taken
// in another order does. Measured 2026-12-05 (Zen 5, the synthetic tiny
// Q4_K_M, 12 positions): the reference rounded one value exactly on a tie
// (layer 1's FFN input at position 11), which AVX-512's decode matvec and
// AVX2's sub-block GEMM rounded the other way (layer cosine 0.99999057);
// the nearest other values lay 5e-5 steps and more from a tie.
const TieWindow = 1e-5

func (d *LayerDiff) add(a, b []float32) {
	var dot, na, nb, nd float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
		nd += (x - y) * (x - y)
		d.MaxAbs = max(d.MaxAbs, math.Abs(x-y))
	}
	cos := 1.0
	if na > 0 && nb > 0 {
		cos = dot / math.Sqrt(na*nb)
	} else if na != nb {
		cos = 0
	}
	d.Cosine = min(d.Cosine, cos)
	if nb > 0 {
		d.RelRMS = max(d.RelRMS, math.Sqrt(nd/nb))
	}
	d.Positions++
}

// FirstDivergence returns the first layer whose cosine falls below minCos,
// or -1 when none does.
func FirstDivergence(diffs []LayerDiff, minCos float64) int {
	for _, d := range diffs {
		if d.Cosine < minCos || math.IsNaN(d.Cosine) {
			return d.Layer
		}
	}
	return -1
}
