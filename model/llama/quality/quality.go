// Package quality measures a model on a text the way llama.cpp's
// llama-perplexity does: perplexity over chunks of n_ctx tokens, scoring the
// second half of each chunk, and the KL divergence of one model's next-token
// distributions from another's (the detector of quantization loss).
package quality

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Evaluate runs tokens as a fresh sequence from position 0 and returns the
// logits of positions from..len(tokens)-1, row-major ((len−from)×vocab).
type Evaluate func(tokens []int32, from int) ([]float32, error)

// Chunks are llama.cpp's perplexity chunks: n_ctx tokens each, the first
// token replaced by BOS when the vocabulary adds one.
type Chunks struct {
	Tokens []int32
	NCtx   int
	BOS    int32 // < 0: the vocabulary adds none
}

// N is the number of whole chunks.
func (c Chunks) N() int { return len(c.Tokens) / c.NCtx }

// Check refuses texts llama.cpp refuses: fewer than 2·n_ctx tokens.
func (c Chunks) Check() error {
	if c.NCtx < 4 {
		return fmt.Errorf("context of %d tokens is too short to score", c.NCtx)
	}
	if len(c.Tokens) < 2*c.NCtx {
		return fmt.Errorf("the text has %d tokens; perplexity with a context of %d needs at least %d", len(c.Tokens), c.NCtx, 2*c.NCtx)
	}
	return nil
}

// First is the first scored logit row of a chunk: its second half.
func (c Chunks) First() int { return c.NCtx / 2 }

func (c Chunks) chunk(i int) []int32 {
	ch := slices.Clone(c.Tokens[i*c.NCtx : (i+1)*c.NCtx])
	if c.BOS >= 0 {
		ch[0] = c.BOS
	}
	return ch
}

// Result is a perplexity and its standard error, llama.cpp's "PPL = x +/- y".
type Result struct {
	PPL, StdErr float64
	Count       int // scored tokens
}

// Perplexity runs llama.cpp's protocol; progress (optional) is told the
// running perplexity after each chunk.
func Perplexity(c Chunks, vocab int, eval Evaluate, progress func(chunk int, ppl float64)) (Result, error) {
	var nll, nll2 float64
	count := 0
	err := c.score(vocab, []scorer{{"", eval}}, func(next int32, lps [][]float64) {
		v := -lps[0][next]
		nll += v
		nll2 += v * v
		count++
	}, func(i int) {
		if progress != nil {
			progress(i, math.Exp(nll/float64(count)))
		}
	})
	if err != nil {
		return Result{}, err
	}
	mean := nll / float64(count)
	r := Result{PPL: math.Exp(mean), Count: count}
	if v := nll2/float64(count) - mean*mean; v > 0 {
		r.StdErr = math.Sqrt(v/float64(count-1)) * r.PPL
	}
	return r, nil
}

// A scorer is a model score evaluates, named in its errors ("" for none).
type scorer struct {
	name string
	eval Evaluate
}

// score is the protocol Perplexity and KLDivergence share: each chunk
// evaluated by every model in turn, then visit called for each scored
// position with the token that follows it and each model's log-probabilities
// there, and chunkDone (optional) after each chunk.
func (c Chunks) score(vocab int, models []scorer, visit func(next int32, lps [][]float64), chunkDone func(chunk int)) error {
	if err := c.Check(); err != nil {
		return err
	}
	first := c.First()
	logits := make([][]float32, len(models))
	lps := make([][]float64, len(models))
	for i := range c.N() {
		ch := c.chunk(i)
		for m, s := range models {
			l, err := s.eval(ch, first)
			if err != nil {
				if s.name != "" {
					return fmt.Errorf("%s, chunk %d: %w", s.name, i, err)
				}
				return fmt.Errorf("chunk %d: %w", i, err)
			}
			if m > 0 && len(l) != len(logits[0]) {
				return errors.New("the models' vocabularies differ")
			}
			logits[m] = l
		}
		for j := first; j < c.NCtx-1; j++ {
			row := (j - first) * vocab
			for m := range models {
				lps[m] = logProbs(logits[m][row : row+vocab])
			}
			visit(c.Tokens[i*c.NCtx+j+1], lps)
		}
		if chunkDone != nil {
			chunkDone(i)
		}
	}
	return nil
}

// Probs is softmax in float64: the next-token distribution of logits.
func Probs(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = max(m, float64(l))
	}
	p := make([]float64, len(logits))
	var sum float64
	for i, l := range logits {
		p[i] = math.Exp(float64(l) - m)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// logProbs is log-softmax in float64.
func logProbs(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = max(m, float64(l))
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l) - m)
	}
	lse := m + math.Log(sum)
	out := make([]float64, len(logits))
	for i, l := range logits {
		out[i] = float64(l) - lse
	}
	return out
}

// KLResult compares a test model's next-token distributions with a base
// model's over the scored positions.
type KLResult struct {
	Base, Test         Result
	MeanKLD, KLDStdErr float64
	MedianKLD, P99KLD  float64
	MaxKLD             float64
	SameTop1           float64 // fraction of positions where the argmax agrees
	RMSDeltaP          float64 // RMS of the change in the correct token's probability
	Positions          int
}

// KLDivergence evaluates both models on the same chunks and reports
// KL(base ‖ test) per position, as llama-perplexity --kl-divergence does.
func KLDivergence(c Chunks, vocab int, base, test Evaluate) (KLResult, error) {
	var r KLResult
	var kls []float64
	var nllB, nllT, dp2 float64
	same := 0
	err := c.score(vocab, []scorer{{"base", base}, {"test", test}}, func(tok int32, lps [][]float64) {
		pb, pt := lps[0], lps[1]
		var kl float64
		ab, at := 0, 0
		for k := range pb {
			if p := math.Exp(pb[k]); p > 0 {
				kl += p * (pb[k] - pt[k])
			}
			if pb[k] > pb[ab] {
				ab = k
			}
			if pt[k] > pt[at] {
				at = k
			}
		}
		kls = append(kls, kl)
		if ab == at {
			same++
		}
		nllB -= pb[tok]
		nllT -= pt[tok]
		d := math.Exp(pt[tok]) - math.Exp(pb[tok])
		dp2 += d * d
	}, nil)
	if err != nil {
		return r, err
	}
	n := float64(len(kls))
	r.Positions = len(kls)
	r.Base = Result{PPL: math.Exp(nllB / n), Count: len(kls)}
	r.Test = Result{PPL: math.Exp(nllT / n), Count: len(kls)}
	var sum, sum2 float64
	for _, k := range kls {
		sum += k
		sum2 += k * k
	}
	r.MeanKLD = sum / n
	if v := sum2/n - r.MeanKLD*r.MeanKLD; v > 0 && n > 1 {
		r.KLDStdErr = math.Sqrt(v / (n - 1))
	}
	slices.Sort(kls)
	r.MedianKLD = kls[len(kls)/2]
	r.P99KLD = kls[min(len(kls)-1, int(0.99*n))]
	r.MaxKLD = kls[len(kls)-1]
	r.SameTop1 = float64(same) / n
	r.RMSDeltaP = math.Sqrt(dp2 / n)
	return r, nil
}
