package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
)

func TestNumericFlags(t *testing.T) {
	maxT := MaxThreads()
	for _, tc := range []struct {
		args []string
		want string // "" for accepted
	}{
		{[]string{"-f", "0.5"}, ""},
		{[]string{"-f", "1"}, ""},
		{[]string{"-f", "nan"}, `invalid value "nan" for flag -f: not a finite number`},
		{[]string{"-f", "NaN"}, "not a finite number"},
		{[]string{"-f", "inf"}, "not a finite number"},
		{[]string{"-f", "-Inf"}, "not a finite number"},
		{[]string{"-f", "1e39"}, "not a finite number"}, // past float32
		{[]string{"-f", "1.5"}, "1.5 is outside the range [0, 1]"},
		{[]string{"-f", "-0.1"}, "outside the range [0, 1]"},
		{[]string{"-f", "0.5x"}, "not a number"},
		{[]string{"-g", "-3.5"}, ""},
		{[]string{"-g", "nan"}, "not a finite number"},
		{[]string{"-i", "3"}, ""},
		{[]string{"-i", "0"}, "0 is outside the range [1, ∞)"},
		{[]string{"-i", "-1"}, "-1 is outside the range [1, ∞)"},
		{[]string{"-i", "2.5"}, "not an integer"},
		{[]string{"-t", "0"}, ""},
		{[]string{"-t", fmt.Sprint(maxT)}, ""},
		{[]string{"-t", "-1"}, "-1 is outside the range [0, "},
		{[]string{"-t", "10000"}, fmt.Sprintf("10000 threads is more than %d", maxT)},
		{[]string{"-l", "1,2, 8"}, ""},
		{[]string{"-l", "1,0"}, "0 is outside the range [1, ∞)"},
		{[]string{"-l", "1,x"}, `not a number: "x"`},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f, g float32
		var i, th int
		var l []int
		Float32Var(fs, &f, "f", 0.25, 0, 1, "")
		Float32Var(fs, &g, "g", 0, math.Inf(-1), math.Inf(1), "")
		IntVar(fs, &i, "i", 7, 1, Unbounded, "")
		ThreadsVar(fs, &th, "t", 0, "")
		IntListVar(fs, &l, "l", 1, Unbounded, "")
		err := fs.Parse(tc.args)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// Defaults are set at registration and printed by the usage.
func TestNumericFlagDefaults(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var b strings.Builder
	fs.SetOutput(&b)
	var f float32
	var i int
	Float32Var(fs, &f, "temp", 0.8, 0, math.Inf(1), "temperature")
	IntVar(fs, &i, "n", 128, 1, Unbounded, "tokens")
	if f != 0.8 || i != 128 {
		t.Errorf("defaults %g %d", f, i)
	}
	fs.PrintDefaults()
	for _, want := range []string{"(default 0.8)", "(default 128)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, b.String())
		}
	}
	if MaxThreads() != threadsPerCPU*runtime.NumCPU() {
		t.Errorf("MaxThreads %d", MaxThreads())
	}
}
