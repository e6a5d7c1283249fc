// Package sample turns logits into the next token: llama.cpp's sampler chain
// (penalties, top-k, top-p, min-p, temperature, a seeded draw) and a
// bit-exact copy of llama2.c's run.c sampler.
package sample

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Params configures a Sampler. Zero values switch a stage off, except the
// penalties, whose neutral value is 1 for RepeatPenalty (0 is read as 1).
type Params struct {
	Temperature      float32 // <= 0: greedy (argmax after penalties)
	TopK             int     // <= 0: off
	TopP             float32 // >= 1 or <= 0: off
	MinP             float32 // <= 0: off
	RepeatPenalty    float32 // 1: off; divides positive logits, multiplies negative ones
	FrequencyPenalty float32 // subtracted once per occurrence
	PresencePenalty  float32 // subtracted once if present
	PenaltyLastN     int     // window of recent tokens the penalties see; 0: 64, -1: all
	Seed             uint64
	// LogitBias is added to the logits of its tokens before anything else
	// (llama.cpp's logit_bias, first in its chain); -Inf bans a token.
	LogitBias map[int]float32
}

// DefaultParams are llama.cpp's common defaults.
func DefaultParams() Params {
	return Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, PenaltyLastN: 64}
}

// Validate reports parameters outside their domain. The comparisons are
// written so that NaN fails them.
func (p Params) Validate() error {
	finite := func(x float32) bool { return x-x == 0 }
	switch {
	case !finite(p.Temperature):
		return fmt.Errorf("temperature %g is not finite", p.Temperature)
	case !(p.TopP >= 0 && p.TopP <= 1):
		return fmt.Errorf("top-p %g is outside [0, 1]", p.TopP)
	case !(p.MinP >= 0 && p.MinP <= 1):
		return fmt.Errorf("min-p %g is outside [0, 1]", p.MinP)
	case !(p.RepeatPenalty >= 0) || !finite(p.RepeatPenalty):
		return fmt.Errorf("repeat penalty %g is negative or not finite", p.RepeatPenalty)
	case !finite(p.FrequencyPenalty) || !finite(p.PresencePenalty):
		return fmt.Errorf("frequency penalty %g or presence penalty %g is not finite", p.FrequencyPenalty, p.PresencePenalty)
	case p.PenaltyLastN < -1:
		return fmt.Errorf("penalty window %d is below -1", p.PenaltyLastN)
	}
	for id, b := range p.LogitBias {
		if b != b || math.IsInf(float64(b), 1) {
			return fmt.Errorf("logit bias %g of token %d is NaN or +Inf", b, id)
		}
	}
	return nil
}

type candidate struct {
	id    int
	logit float32
	p     float32
}

// Sampler applies llama.cpp's default chain in its order: penalties, top-k,
// top-p, min-p, temperature, then a draw from the remaining distribution. It
// is deterministic for a seed. It is not safe for concurrent use.
type Sampler struct {
	p       Params
	con     Constraint // nil: none
	rng     *RNG
	cand    []candidate
	history []int // tokens accepted so far, newest last
	counts  map[int]int
	err     error // the constraint allowed no token (Err)
}

// ErrNoToken is Err's error: the constraint allowed no token at a step,
// so the token Sample returned does not follow it.
var ErrNoToken = errors.New("sample: the constraint (JSON schema or grammar) allows no token here")

// Err is ErrNoToken once a Sample found no token its constraint allows
// (the text can no longer follow it), else nil. A generation stops on it
// rather than going on unconstrained.
func (s *Sampler) Err() error { return s.err }

// New returns a sampler for a vocabulary of n tokens.
func New(n int, p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.RepeatPenalty == 0 {
		p.RepeatPenalty = 1
	}
	if p.PenaltyLastN == 0 {
		p.PenaltyLastN = 64
	}
	for id := range p.LogitBias {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("logit bias for token %d: the vocabulary has tokens 0 to %d", id, n-1)
		}
	}
	return &Sampler{p: p, rng: NewRNG(p.Seed), cand: make([]candidate, 0, n), counts: map[int]int{}}, nil
}

// A Constraint limits the tokens a Sampler may pick (a grammar, such as
// jsonmode's): Allows says whether a token may come next, Accept advances
// it over the token picked.
type Constraint interface {
	Allows(id int) bool
	Accept(id int)
}

// SetConstraint makes every later Sample pick a token c allows, as
// llama.cpp applies a grammar: the chain runs as it would without it; when
// its token is not allowed, the chain runs again with every token c does
// not allow removed. The token picked is passed to c.Accept.
func (s *Sampler) SetConstraint(c Constraint) { s.con = c }

// Accept records a token of the context (prompt or generated) for the penalties.
func (s *Sampler) Accept(token int) { s.history = append(s.history, token) }

// Reset forgets the accepted tokens; the RNG continues.
func (s *Sampler) Reset() { s.history = s.history[:0] }

// Sample picks the next token. logits is left unchanged. It never panics:
// a NaN logit is never picked (read as -Inf) and infinities are handled, but
// such logits mean the model has broken down, which its caller reports
// (llama.Context.Eval does).
func (s *Sampler) Sample(logits []float32) int {
	id := s.sample(logits, false)
	if s.con != nil {
		if !s.con.Allows(id) {
			id = s.sample(logits, true)
			if !s.con.Allows(id) {
				s.err = ErrNoToken
			}
		}
		s.con.Accept(id)
	}
	return id
}

// sample runs the chain once; with constrained, over the tokens the
// constraint allows only.
func (s *Sampler) sample(logits []float32, constrained bool) int {
	c := s.cand[:0]
	for i, l := range logits {
		if l != l || (constrained && !s.con.Allows(i)) {
			l = float32(math.Inf(-1))
		}
		c = append(c, candidate{id: i, logit: l})
	}
	for id, b := range s.p.LogitBias {
		if id < len(c) {
			c[id].logit += b
		}
	}
	s.penalize(c)
	if s.p.Temperature <= 0 {
		best := 0
		for i := range c {
			if c[i].logit > c[best].logit {
				best = i
			}
		}
		return c[best].id
	}
	c = topK(c, s.p.TopK)
	c = topP(c, s.p.TopP)
	c = minP(c, s.p.MinP)
	for i := range c {
		c[i].logit /= s.p.Temperature
	}
	softmax(c)
	coin := float64(s.rng.Uint32()>>8) / (1 << 24)
	var cdf float64
	for _, x := range c {
		cdf += float64(x.p)
		if coin < cdf {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// penalize is llama.cpp's llama_sampler_penalties over the recent window.
func (s *Sampler) penalize(c []candidate) {
	if s.p.RepeatPenalty == 1 && s.p.FrequencyPenalty == 0 && s.p.PresencePenalty == 0 {
		return
	}
	window := s.history
	if n := s.p.PenaltyLastN; n >= 0 && len(window) > n {
		window = window[len(window)-n:]
	}
	clear(s.counts)
	for _, t := range window {
		s.counts[t]++
	}
	for t, n := range s.counts {
		if t < 0 || t >= len(c) {
			continue
		}
		l := c[t].logit
		if l <= 0 {
			l *= s.p.RepeatPenalty
		} else {
			l /= s.p.RepeatPenalty
		}
		l -= float32(n)*s.p.FrequencyPenalty + s.p.PresencePenalty
		c[t].logit = l
	}
}

func sortByLogit(c []candidate) {
	slices.SortStableFunc(c, func(a, b candidate) int { return cmp.Compare(b.logit, a.logit) })
}

// topK keeps the k largest logits in descending order, ties to the lower
// id: a stable sort's first k, found with a min-heap of the best so far in
// c[:k] instead of sorting the whole vocabulary (about 50 ms a token for
// Llama 3's 128,256 on a busy core, a server's every stream's every token).
func topK(c []candidate, k int) []candidate {
	if k <= 0 || k >= len(c) {
		return c
	}
	h := c[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for _, x := range c[k:] {
		if worse(h[0], x) {
			h[0] = x
			siftDown(h, 0)
		}
	}
	slices.SortFunc(h, func(a, b candidate) int {
		if r := cmp.Compare(b.logit, a.logit); r != 0 {
			return r
		}
		return cmp.Compare(a.id, b.id)
	})
	return h
}

// worse orders candidates as topK keeps them: a lower logit, or the same
// logit and a higher id, is worse.
func worse(a, b candidate) bool {
	return a.logit < b.logit || (a.logit == b.logit && a.id > b.id)
}

// siftDown restores the min-heap (the worst candidate at h[0]) below i.
func siftDown(h []candidate, i int) {
	for {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && worse(h[l], h[m]) {
			m = l
		}
		if r < len(h) && worse(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// topP keeps the smallest prefix, by descending probability, whose mass
// reaches p (llama.cpp: cumulative >= p, the crossing token included).
func topP(c []candidate, p float32) []candidate {
	if p <= 0 || p >= 1 {
		return c
	}
	sortByLogit(c)
	softmax(c)
	var cum float32
	for i := range c {
		cum += c[i].p
		if cum >= p {
			return c[:i+1]
		}
	}
	return c
}

// minP keeps tokens whose probability is at least p times the largest one.
func minP(c []candidate, p float32) []candidate {
	if p <= 0 {
		return c
	}
	maxl := c[0].logit
	for _, x := range c {
		maxl = max(maxl, x.logit)
	}
	minl := maxl + float32(math.Log(float64(p)))
	kept := c[:0]
	for _, x := range c {
		if x.logit >= minl {
			kept = append(kept, x)
		}
	}
	if len(kept) == 0 { // only where maxl is -Inf: every logit is
		return c[:1]
	}
	return kept
}

func softmax(c []candidate) {
	maxl := c[0].logit
	for _, x := range c {
		maxl = max(maxl, x.logit)
	}
	if math.IsInf(float64(maxl), 0) {
		// exp(l - maxl) would be NaN; the limit gives the mass to the
		// tokens at maxl (at +Inf) or spreads it evenly (all at -Inf).
		n := 0
		for _, x := range c {
			if x.logit == maxl {
				n++
			}
		}
		for i := range c {
			c[i].p = 0
			if c[i].logit == maxl {
				c[i].p = 1 / float32(n)
			}
		}
		return
	}
	var sum float64
	for i := range c {
		e := math.Exp(float64(c[i].logit - maxl))
		c[i].p = float32(e)
		sum += e
	}
	for i := range c {
		c[i].p = float32(float64(c[i].p) / sum)
	}
}
