package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Values printed by run.c's random_u32 and random_f32 compiled with gcc.
func TestRNGMatchesRunC(t *testing.T) {
	r := NewRNG(42)
	for i, want := range []uint32{1456360119, 3359763283, 3393612768, 4054632243} {
		if got := r.Uint32(); got != want {
			t.Errorf("seed 42, draw %d: %d, want %d", i, got, want)
		}
	}
	r = NewRNG(133742)
	for i, want := range []float32{0.706299007, 0.622677088, 0.538505733} {
		if got := r.Float32(); got != want {
			t.Errorf("seed 133742, f32 draw %d: %.9g, want %.9g", i, got, want)
		}
	}
}

func logitsOf(p []float64) []float32 {
	l := make([]float32, len(p))
	for i, v := range p {
		l[i] = float32(math.Log(v))
	}
	return l
}

// run.c's top-p: with topp 0.5 over {0.4, 0.3, 0.2, 0.1} the nucleus is the
// first two tokens (cumulative 0.7 first exceeds 0.5); the coin is scaled by
// their mass, so each is drawn in proportion 4:3 and tokens 2 and 3 never.
func TestLlama2CTopP(t *testing.T) {
	logits := logitsOf([]float64{0.1, 0.4, 0.2, 0.3})
	s := NewLlama2C(4, 1, 0.5, 7)
	counts := map[int]int{}
	for range 7000 {
		counts[s.Sample(logits)]++
	}
	if counts[0]+counts[2] != 0 {
		t.Errorf("tokens outside the nucleus drawn: %v", counts)
	}
	if r := float64(counts[1]) / float64(counts[3]); math.Abs(r-4.0/3) > 0.1 {
		t.Errorf("ratio of token 1 to token 3 is %.3f, want 4/3 (%v)", r, counts)
	}
	if got := NewLlama2C(4, 0, 0.9, 1).Sample(logits); got != 1 {
		t.Errorf("temperature 0: %d, want argmax 1", got)
	}
}

func TestSamplerDeterministicForSeed(t *testing.T) {
	logits := logitsOf([]float64{0.1, 0.25, 0.2, 0.3, 0.15})
	draw := func(seed uint64) []int {
		s, err := New(5, Params{Temperature: 1, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for range 50 {
			out = append(out, s.Sample(logits))
		}
		return out
	}
	a, b, c := draw(3), draw(3), draw(4)
	same := func(x, y []int) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("same seed, different draws")
	}
	if same(a, c) {
		t.Error("different seeds, same 50 draws")
	}
}

// Each filter leaves only the tokens llama.cpp's would: draws never fall
// outside them.
func TestSamplerFilters(t *testing.T) {
	p := []float64{0.05, 0.4, 0.3, 0.15, 0.1}
	logits := logitsOf(p)
	for _, c := range []struct {
		name    string
		params  Params
		allowed []int
	}{
		{"greedy", Params{Temperature: 0}, []int{1}},
		{"top-k 2", Params{Temperature: 1, TopK: 2}, []int{1, 2}},
		{"top-p 0.7 keeps the crossing token", Params{Temperature: 1, TopP: 0.7}, []int{1, 2}},
		{"top-p 0.71", Params{Temperature: 1, TopP: 0.71}, []int{1, 2, 3}},
		{"min-p 0.3 of 0.4", Params{Temperature: 1, MinP: 0.3}, []int{1, 2, 3}},
	} {
		s, err := New(len(p), c.params)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for range 2000 {
			seen[s.Sample(logits)] = true
		}
		for id := range seen {
			ok := false
			for _, a := range c.allowed {
				ok = ok || a == id
			}
			if !ok {
				t.Errorf("%s: drew %d, allowed %v", c.name, id, c.allowed)
			}
		}
		if len(seen) != len(c.allowed) {
			t.Errorf("%s: drew %v, want all of %v", c.name, seen, c.allowed)
		}
	}
}

// llama.cpp's penalties: positive logits divided, negative multiplied by the
// repeat penalty; count×frequency and presence subtracted.
func TestPenalties(t *testing.T) {
	s, err := New(3, Params{Temperature: 0, RepeatPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25, PenaltyLastN: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.Accept(0)
	s.Accept(0)
	s.Accept(2)
	c := []candidate{{id: 0, logit: 3}, {id: 1, logit: 1}, {id: 2, logit: -1}}
	s.penalize(c)
	want := []float32{3.0/2 - 2*0.5 - 0.25, 1, -1*2 - 0.5 - 0.25}
	for i := range c {
		if math.Abs(float64(c[i].logit-want[i])) > 1e-6 {
			t.Errorf("token %d: %g, want %g", i, c[i].logit, want[i])
		}
	}
	// Greedy sees the penalties: token 0 (3 → 0.25) loses to token 1.
	if got := s.Sample([]float32{3, 1, -1}); got != 1 {
		t.Errorf("greedy after penalties chose %d, want 1", got)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, p := range []Params{{TopP: 1.5}, {MinP: -0.1}, {RepeatPenalty: -1}, {PenaltyLastN: -2}} {
		if _, err := New(4, p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

// topK keeps what a stable sort of the whole vocabulary keeps, in its
// order, ties (many here: logits from a few values) included.
func TestTopKIsSortsPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		n := 1 + rng.IntN(3000)
		c := make([]candidate, n)
		for i := range c {
			c[i] = candidate{id: i, logit: float32(rng.IntN(1 + trial%50))}
			if trial%7 == 0 {
				c[i].logit = float32(rng.NormFloat64())
			}
		}
		want := slices.Clone(c)
		sortByLogit(want)
		for _, k := range []int{1, 2, 40, n - 1, n} {
			got := topK(slices.Clone(c), k)
			if k <= 0 || k >= n {
				continue
			}
			if !slices.Equal(got, want[:k]) {
				t.Fatalf("trial %d, n %d, k %d: %v, want %v", trial, n, k, got[:min(k, 5)], want[:min(k, 5)])
			}
		}
	}
}

// A logit bias moves its token before the chain: greedy picks a token
// biased past the best, -Inf bans the best, and a draw never returns a
// banned token. Ids outside the vocabulary and NaN biases are refused.
func TestLogitBias(t *testing.T) {
	logits := logitsOf([]float64{0.1, 0.4, 0.2, 0.3})
	pick := func(p Params) int {
		s, err := New(4, p)
		if err != nil {
			t.Fatal(err)
		}
		return s.Sample(logits)
	}
	if got := pick(Params{LogitBias: map[int]float32{2: 5}}); got != 2 {
		t.Errorf("greedy with token 2 biased by +5: %d, want 2", got)
	}
	if got := pick(Params{LogitBias: map[int]float32{1: float32(math.Inf(-1))}}); got != 3 {
		t.Errorf("greedy with token 1 banned: %d, want 3", got)
	}
	s, err := New(4, Params{Temperature: 1, Seed: 9, LogitBias: map[int]float32{1: float32(math.Inf(-1)), 3: -100}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2000 {
		if got := s.Sample(logits); got == 1 || got == 3 {
			t.Fatalf("drew token %d, banned or biased by -100", got)
		}
	}
	if _, err := New(4, Params{LogitBias: map[int]float32{4: 1}}); err == nil {
		t.Error("a bias for token 4 of a 4-token vocabulary was accepted")
	}
	if _, err := New(4, Params{LogitBias: map[int]float32{0: float32(math.NaN())}}); err == nil {
		t.Error("a NaN bias was accepted")
	}
}

// evenOnly allows even tokens and records what it was told was picked.
type evenOnly struct{ picked []int }

func (e *evenOnly) Allows(id int) bool { return id%2 == 0 }
func (e *evenOnly) Accept(id int)      { e.picked = append(e.picked, id) }

// A constraint holds for greedy and random draws alike, and is told each
// pick; where the best token is allowed the draw is the unconstrained one.
func TestConstraint(t *testing.T) {
	logits := logitsOf([]float64{0.1, 0.4, 0.2, 0.3})
	for _, p := range []Params{{}, {Temperature: 1, Seed: 4}, DefaultParams()} {
		s, err := New(4, p)
		if err != nil {
			t.Fatal(err)
		}
		e := &evenOnly{}
		s.SetConstraint(e)
		for range 500 {
			if id := s.Sample(logits); id%2 != 0 {
				t.Fatalf("%+v: drew token %d, which the constraint refuses", p, id)
			}
		}
		if len(e.picked) != 500 {
			t.Errorf("%+v: the constraint was told of %d picks, want 500", p, len(e.picked))
		}
	}
	s, _ := New(4, Params{})
	s.SetConstraint(&evenOnly{})
	if got := s.Sample(logitsOf([]float64{0.1, 0.2, 0.6, 0.1})); got != 2 || s.Err() != nil {
		t.Errorf("greedy, the best token allowed: %d (err %v), want 2", got, s.Err())
	}
	// A constraint that allows nothing: the sampler says so.
	for _, p := range []Params{{}, {Temperature: 1, Seed: 4}} {
		s, _ := New(4, p)
		s.SetConstraint(noneAllowed{})
		s.Sample(logits)
		if !errors.Is(s.Err(), ErrNoToken) {
			t.Errorf("%+v: no token allowed, Err %v", p, s.Err())
		}
	}
}

type noneAllowed struct{}

func (noneAllowed) Allows(int) bool { return false }
func (noneAllowed) Accept(int)      {}
