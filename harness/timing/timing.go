// Package timing measures contenders head to head: each is warmed up (not
// recorded), its inner repetition count calibrated to a minimum sample
// duration, then N runs are taken interleaved across the contenders with the
// order reversed on every other run, so drift (thermal, frequency, noisy
// neighbours) spreads evenly instead of favouring whoever ran first. Every
// raw sample is kept.
package timing

import (
	"fmt"
	"time"
)

// Options control a measurement. Zero fields take the defaults.
type Options struct {
	Runs      int           // recorded samples per contender; default 10
	MinSample time.Duration // minimum duration of one sample; default 20 ms
	Warmup    time.Duration // untimed running before calibration; default 50 ms
	// Progress, if set, is called after every sample.
	Progress func(run, contender int)
}

// Defaults.
const (
	DefaultRuns      = 10
	DefaultMinSample = 20 * time.Millisecond
	DefaultWarmup    = 50 * time.Millisecond
)

func (o Options) withDefaults() Options {
	if o.Runs <= 0 {
		o.Runs = DefaultRuns
	}
	if o.MinSample <= 0 {
		o.MinSample = DefaultMinSample
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	}
	return o
}

// A Contender is one thing to time: a call doing one operation.
type Contender struct {
	Name string
	Run  func()
}

// Samples are one contender's recorded timings.
type Samples struct {
	Name    string    `json:"name"`
	Iters   int       `json:"iters"`     // operations per sample
	NsPerOp []float64 `json:"ns_per_op"` // one value per run, in run order
	// Order[i] is the contender's position within run i (0 = first).
	Order []int `json:"order"`
}

// Interleaved times the contenders as the package comment describes.
func Interleaved(cs []Contender, opt Options) ([]Samples, error) {
	opt = opt.withDefaults()
	if len(cs) == 0 {
		return nil, fmt.Errorf("timing: no contenders")
	}
	out := make([]Samples, len(cs))
	for i, c := range cs {
		if c.Run == nil {
			return nil, fmt.Errorf("timing: contender %q has no Run", c.Name)
		}
		warm(c.Run, opt.Warmup)
		out[i] = Samples{Name: c.Name, Iters: calibrate(c.Run, opt.MinSample)}
	}
	for run := range opt.Runs {
		for pos := range cs {
			i := pos
			if run%2 == 1 {
				i = len(cs) - 1 - pos
			}
			c := cs[i]
			start := time.Now()
			for range out[i].Iters {
				c.Run()
			}
			el := time.Since(start)
			out[i].NsPerOp = append(out[i].NsPerOp, float64(el.Nanoseconds())/float64(out[i].Iters))
			out[i].Order = append(out[i].Order, pos)
			if opt.Progress != nil {
				opt.Progress(run, i)
			}
		}
	}
	return out, nil
}

// warm runs f, untimed, for at least d (and at least once).
func warm(f func(), d time.Duration) {
	start := time.Now()
	for {
		f()
		if time.Since(start) >= d {
			return
		}
	}
}

// calibrate returns how many calls of f take at least d, doubling from one.
func calibrate(f func(), d time.Duration) int {
	n := 1
	for {
		start := time.Now()
		for range n {
			f()
		}
		el := time.Since(start)
		if el >= d || n >= 1<<30 {
			return n
		}
		if el <= 0 {
			n *= 16
			continue
		}
		// Aim just past d, at most 16× at a time.
		next := int(float64(n) * 1.2 * float64(d) / float64(el))
		n = max(n+1, min(next, 16*n))
	}
}
