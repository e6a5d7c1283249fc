package cli

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
)

// Numeric flags are checked here, when they are parsed, for every command:
// a value that is not a number, not finite (NaN, ±Inf) or outside the
// flag's range is refused with an error naming the flag and the range, so
// no command sees it. The flag package reports it as
// `invalid value "nan" for flag -min-p: not a finite number`.

// Unbounded is the hi of a range without an upper bound.
const Unbounded = math.MaxInt

// threadsPerCPU bounds worker threads at this many per CPU. Workers meet at
// a barrier after every operation, so beyond the cores they only wait on
// each other (10000 threads made two tokens take 11× longer on 2 cores)
// and each holds buffers of its own; a few per CPU still allows deliberate
// oversubscription experiments.
const threadsPerCPU = 4

// MaxThreads is the most worker threads a command accepts on this machine:
// threadsPerCPU per CPU that this process may run on (runtime.NumCPU).
func MaxThreads() int { return threadsPerCPU * runtime.NumCPU() }

type intFlag struct {
	p      *int
	lo, hi int
}

func (f *intFlag) String() string {
	if f == nil || f.p == nil {
		return "0"
	}
	return strconv.Itoa(*f.p)
}

func (f *intFlag) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, strconv.IntSize)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	return checkInt(int(n), f.lo, f.hi, f.p)
}

func checkInt(n, lo, hi int, dst *int) error {
	if n < lo || n > hi {
		return fmt.Errorf("%d is outside %s", n, intRange(lo, hi))
	}
	*dst = n
	return nil
}

func intRange(lo, hi int) string {
	if hi == Unbounded {
		return fmt.Sprintf("the range [%d, ∞)", lo)
	}
	return fmt.Sprintf("the range [%d, %d]", lo, hi)
}

// IntVar defines an int flag whose value must lie in [lo, hi] (hi may be
// Unbounded).
func IntVar(fs *flag.FlagSet, p *int, name string, value, lo, hi int, usage string) {
	*p = value
	fs.Var(&intFlag{p: p, lo: lo, hi: hi}, name, usage)
}

// Int is IntVar returning the variable.
func Int(fs *flag.FlagSet, name string, value, lo, hi int, usage string) *int {
	p := new(int)
	IntVar(fs, p, name, value, lo, hi, usage)
	return p
}

type threadsFlag struct{ p *int }

func (f *threadsFlag) String() string { return (&intFlag{p: f.p}).String() }

func (f *threadsFlag) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, strconv.IntSize)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	if max := MaxThreads(); int(n) > max {
		return fmt.Errorf("%d threads is more than %d (%d per CPU on %d CPUs): more workers than cores only wait on each other",
			n, max, threadsPerCPU, runtime.NumCPU())
	}
	return checkInt(int(n), 0, MaxThreads(), f.p)
}

// ThreadsVar defines a worker-thread count flag: 0 (the caller's default,
// usually every CPU) up to MaxThreads.
func ThreadsVar(fs *flag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var(&threadsFlag{p: p}, name, usage)
}

// Threads is ThreadsVar returning the variable.
func Threads(fs *flag.FlagSet, name string, value int, usage string) *int {
	p := new(int)
	ThreadsVar(fs, p, name, value, usage)
	return p
}

type float32Flag struct {
	p      *float32
	lo, hi float64
}

func (f *float32Flag) String() string {
	if f == nil || f.p == nil {
		return "0"
	}
	return strconv.FormatFloat(float64(*f.p), 'g', -1, 32)
}

func (f *float32Flag) Set(s string) error {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
	if err != nil && !math.IsInf(x, 0) {
		return fmt.Errorf("not a number")
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("not a finite number")
	}
	if x < f.lo || x > f.hi {
		return fmt.Errorf("%g is outside %s", x, floatRange(f.lo, f.hi))
	}
	*f.p = float32(x)
	return nil
}

func floatRange(lo, hi float64) string {
	l, h := "(-∞", "∞)"
	if !math.IsInf(lo, -1) {
		l = "[" + strconv.FormatFloat(lo, 'g', -1, 64)
	}
	if !math.IsInf(hi, 1) {
		h = strconv.FormatFloat(hi, 'g', -1, 64) + "]"
	}
	return "the range " + l + ", " + h
}

// Float32Var defines a float32 flag whose value must be finite and lie in
// [lo, hi]; math.Inf(-1) and math.Inf(1) leave a side open (a value must
// still be finite).
func Float32Var(fs *flag.FlagSet, p *float32, name string, value float32, lo, hi float64, usage string) {
	*p = value
	fs.Var(&float32Flag{p: p, lo: lo, hi: hi}, name, usage)
}

type intListFlag struct {
	p      *[]int
	lo, hi int
}

func (f *intListFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	s := make([]string, len(*f.p))
	for i, n := range *f.p {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (f *intListFlag) Set(s string) error {
	*f.p = (*f.p)[:0]
	for _, e := range SplitList(s) {
		n, err := strconv.ParseInt(e, 0, strconv.IntSize)
		if err != nil {
			return fmt.Errorf("not a number: %q", e) // the wording of the lists this replaced
		}
		var v int
		if err := checkInt(int(n), f.lo, f.hi, &v); err != nil {
			return err
		}
		*f.p = append(*f.p, v)
	}
	return nil
}

// IntListVar defines a comma-separated list of ints, each in [lo, hi].
func IntListVar(fs *flag.FlagSet, p *[]int, name string, lo, hi int, usage string) {
	fs.Var(&intListFlag{p: p, lo: lo, hi: hi}, name, usage)
}
