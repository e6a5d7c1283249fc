package sample

import (
	"math"
	"testing"
)

// Non-finite logits (a damaged model, issue 22) never make a sampler panic
// or return a token outside the vocabulary; the forward pass reports them.
func TestNonFiniteLogitsNeverPanic(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	const n = 64
	fill := func(f func(i int) float32) []float32 {
		l := make([]float32, n)
		for i := range l {
			l[i] = f(i)
		}
		return l
	}
	inputs := map[string][]float32{
		"all NaN":   fill(func(int) float32 { return nan }),
		"one NaN":   fill(func(i int) float32 { return map[bool]float32{true: nan, false: float32(i % 7)}[i == 3] }),
		"all -Inf":  fill(func(int) float32 { return -inf }),
		"two +Inf":  fill(func(i int) float32 { return map[bool]float32{true: inf, false: float32(i)}[i == 5 || i == 9] }),
		"NaN, +Inf": fill(func(i int) float32 { return []float32{nan, inf, -inf, 1}[i%4] }),
	}
	params := []Params{DefaultParams(), {Temperature: 0}, {Temperature: 1}, {Temperature: 1, MinP: 0.5},
		{Temperature: 0.7, TopP: 0.5}, {Temperature: 1, TopK: 3, RepeatPenalty: 1.3, PresencePenalty: 0.5}}
	for name, logits := range inputs {
		for _, p := range params {
			s, err := New(n, p)
			if err != nil {
				t.Fatal(err)
			}
			s.Accept(5)
			for range 20 {
				if id := s.Sample(logits); id < 0 || id >= n {
					t.Errorf("%s, %+v: token %d outside [0, %d)", name, p, id, n)
				}
			}
		}
		for _, topp := range []float32{0, 0.9} {
			for _, temp := range []float32{0, 1} {
				if id := NewLlama2C(n, temp, topp, 1).Sample(logits); id < 0 || id >= n {
					t.Errorf("%s, llama2.c temp %g top-p %g: token %d", name, temp, topp, id)
				}
			}
		}
	}
}

// A NaN logit is never picked, greedy or sampled; a +Inf one always is.
func TestNaNNeverPicked(t *testing.T) {
	nan := float32(math.NaN())
	logits := []float32{nan, 1, 3, 2, nan}
	for _, p := range []Params{{Temperature: 0}, DefaultParams(), {Temperature: 1}} {
		s, _ := New(len(logits), p)
		for range 200 {
			if id := s.Sample(logits); logits[id] != logits[id] {
				t.Fatalf("%+v picked NaN logit %d", p, id)
			}
		}
	}
	logits[3] = float32(math.Inf(1))
	s, _ := New(len(logits), DefaultParams())
	for range 50 {
		if id := s.Sample(logits); id != 3 {
			t.Fatalf("picked %d, want the +Inf logit 3", id)
		}
	}
}

// NaN used to pass the range checks (every comparison with it is false).
func TestParamsValidateNaN(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, p := range []Params{{MinP: nan}, {TopP: nan}, {Temperature: nan}, {Temperature: inf},
		{RepeatPenalty: nan}, {RepeatPenalty: inf}, {PresencePenalty: nan}, {FrequencyPenalty: -inf}} {
		if _, err := New(4, p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := New(4, DefaultParams()); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}
