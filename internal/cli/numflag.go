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

// numFlag is a numeric flag.Value kept in *p: parse turns the (trimmed)
// text into a value, refusing one that is not a number or out of range;
// format shows a value.
type numFlag[T any] struct {
	p      *T
	parse  func(s string) (T, error)
	format func(T) string
}

func (f *numFlag[T]) String() string {
	if f == nil || f.p == nil {
		return "0"
	}
	return f.format(*f.p)
}

func (f *numFlag[T]) Set(s string) error {
	v, err := f.parse(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}

// intIn parses an integer in [lo, hi].
func intIn(lo, hi int) func(s string) (int, error) {
	return func(s string) (int, error) {
		n, err := strconv.ParseInt(s, 0, strconv.IntSize)
		if err != nil {
			return 0, fmt.Errorf("not an integer")
		}
		if err := checkInt(int(n), lo, hi); err != nil {
			return 0, err
		}
		return int(n), nil
	}
}

func checkInt(n, lo, hi int) error {
	if n < lo || n > hi {
		return fmt.Errorf("%d is outside %s", n, intRange(lo, hi))
	}
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
	fs.Var(&numFlag[int]{p: p, parse: intIn(lo, hi), format: strconv.Itoa}, name, usage)
}

// Int is IntVar returning the variable.
func Int(fs *flag.FlagSet, name string, value, lo, hi int, usage string) *int {
	p := new(int)
	IntVar(fs, p, name, value, lo, hi, usage)
	return p
}

// parseThreads parses a worker-thread count: 0 to MaxThreads.
func parseThreads(s string) (int, error) {
	n, err := intIn(math.MinInt, Unbounded)(s)
	if err != nil {
		return 0, err
	}
	max := MaxThreads()
	if n > max {
		return 0, fmt.Errorf("%d threads is more than %d (%d per CPU on %d CPUs): more workers than cores only wait on each other",
			n, max, threadsPerCPU, runtime.NumCPU())
	}
	if err := checkInt(n, 0, max); err != nil {
		return 0, err
	}
	return n, nil
}

// ThreadsVar defines a worker-thread count flag: 0 (the caller's default,
// usually every CPU) up to MaxThreads.
func ThreadsVar(fs *flag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var(&numFlag[int]{p: p, parse: parseThreads, format: strconv.Itoa}, name, usage)
}

// Threads is ThreadsVar returning the variable.
func Threads(fs *flag.FlagSet, name string, value int, usage string) *int {
	p := new(int)
	ThreadsVar(fs, p, name, value, usage)
	return p
}

// float32In parses a finite float32 in [lo, hi].
func float32In(lo, hi float64) func(s string) (float32, error) {
	return func(s string) (float32, error) {
		x, err := strconv.ParseFloat(s, 32)
		if err != nil && !math.IsInf(x, 0) {
			return 0, fmt.Errorf("not a number")
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("not a finite number")
		}
		if x < lo || x > hi {
			return 0, fmt.Errorf("%g is outside %s", x, floatRange(lo, hi))
		}
		return float32(x), nil
	}
}

func formatFloat32(x float32) string { return strconv.FormatFloat(float64(x), 'g', -1, 32) }

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
	fs.Var(&numFlag[float32]{p: p, parse: float32In(lo, hi), format: formatFloat32}, name, usage)
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
		if err := checkInt(int(n), f.lo, f.hi); err != nil {
			return err
		}
		*f.p = append(*f.p, int(n))
	}
	return nil
}

// IntListVar defines a comma-separated list of ints, each in [lo, hi].
func IntListVar(fs *flag.FlagSet, p *[]int, name string, lo, hi int, usage string) {
	fs.Var(&intListFlag{p: p, lo: lo, hi: hi}, name, usage)
}
