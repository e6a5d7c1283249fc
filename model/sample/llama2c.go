package sample

import (
	"cmp"
	"math"
	"slices"
)

// Llama2C reproduces the sampler of llama2.c's run.c bit for bit: logits
// divided by the temperature, a float32 softmax, one coin per token from the
// xorshift64* RNG, and either multinomial sampling or run.c's top-p (a
// pre-filter at (1-topp)/(n-1), a descending sort, the nucleus cut where the
// cumulative probability first exceeds topp). Temperature 0 is argmax.
type Llama2C struct {
	Temperature float32
	TopP        float32
	rng         *RNG
	probs       []float32
	index       []probIndex
}

type probIndex struct {
	prob  float32
	index int
}

// NewLlama2C returns a run.c sampler for a vocabulary of n tokens.
func NewLlama2C(n int, temperature, topp float32, seed uint64) *Llama2C {
	return &Llama2C{
		Temperature: temperature,
		TopP:        topp,
		rng:         NewRNG(seed),
		probs:       make([]float32, n),
		index:       make([]probIndex, n),
	}
}

// Sample picks the next token from logits, which it leaves unchanged.
func (s *Llama2C) Sample(logits []float32) int {
	if s.Temperature == 0 {
		return Argmax(logits)
	}
	if len(logits) > len(s.probs) {
		s.probs, s.index = make([]float32, len(logits)), make([]probIndex, len(logits))
	}
	probs := s.probs[:len(logits)]
	for i, l := range logits {
		probs[i] = l / s.Temperature
	}
	softmax32(probs)
	coin := s.rng.Float32()
	if s.TopP <= 0 || s.TopP >= 1 {
		return sampleMult(probs, coin)
	}
	return s.sampleTopP(probs, coin)
}

// Argmax returns the index of the first largest value.
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// softmax32 is run.c's softmax: float32 throughout, max subtracted first.
func softmax32(x []float32) {
	// slices.Max differs from run.c's max loop only when x holds a NaN,
	// which makes every result NaN either way.
	maxv := slices.Max(x)
	var sum float32
	for i, v := range x {
		x[i] = expf(v - maxv)
		sum += x[i]
	}
	for i := range x {
		x[i] /= sum
	}
}

// expf is a correctly rounded float32 exponential, as glibc's expf is.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

func sampleMult(probs []float32, coin float32) int {
	var cdf float32
	for i, p := range probs {
		cdf += p
		if coin < cdf {
			return i
		}
	}
	return len(probs) - 1
}

func (s *Llama2C) sampleTopP(probs []float32, coin float32) int {
	n := len(probs)
	cutoff := (1 - s.TopP) / float32(n-1)
	cand := s.index[:0]
	for i, p := range probs {
		if p >= cutoff {
			cand = append(cand, probIndex{p, i})
		}
	}
	if len(cand) == 0 { // NaN probabilities only: no panic, the caller reports them
		return sampleMult(probs, coin)
	}
	// glibc's qsort is a merge sort when memory allows, hence stable.
	slices.SortStableFunc(cand, func(a, b probIndex) int { return cmp.Compare(b.prob, a.prob) })
	var cum float32
	last := len(cand) - 1
	for i, c := range cand {
		cum += c.prob
		if cum > s.TopP {
			last = i
			break
		}
	}
	r := coin * cum
	var cdf float32
	for _, c := range cand[:last+1] {
		cdf += c.prob
		if r < cdf {
			return c.index
		}
	}
	return cand[last].index
}
