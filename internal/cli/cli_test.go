package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
)

func TestMainExitCodes(t *testing.T) {
	s := NewSet("prog")
	s.Register(Command{Name: "ok", Summary: "works", Run: func(args []string, out, _ io.Writer) error {
		fmt.Fprint(out, strings.Join(args, ","))
		return nil
	}})
	s.Register(Command{Name: "fail", Summary: "fails", Run: func([]string, io.Writer, io.Writer) error { return errors.New("boom") }})
	s.Register(Command{Name: "misuse", Summary: "usage error", Run: func([]string, io.Writer, io.Writer) error { return ErrUsage }})
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"ok", "a", "b"}, 0, "a,b", ""},
		{[]string{"fail"}, 1, "", "prog fail: boom\n"},
		{[]string{"misuse"}, 2, "", ""},
		{[]string{"nope"}, 2, "", `prog: unknown command "nope"`},
		{nil, 2, "", "usage: prog COMMAND"},
		{[]string{"help"}, 0, "", "  fail         fails"},
	} {
		var out, errOut bytes.Buffer
		if code := s.Main(tc.args, &out, &errOut); code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		if out.String() != tc.stdout {
			t.Errorf("%v: stdout %q, want %q", tc.args, out.String(), tc.stdout)
		}
		if !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("%v: stderr %q, want it to contain %q", tc.args, errOut.String(), tc.stderr)
		}
	}
	if _, ok := s.Lookup("ok"); !ok {
		t.Error("Lookup(ok) failed")
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	s := NewSet("prog")
	s.Register(Command{Name: "x"})
	s.Register(Command{Name: "x"})
}

// fullWriter fails as a write to a full disk (or /dev/full) does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A command whose output is lost fails, even if it ignored its writes'
// errors (issue 22: predict >/dev/full exited 0).
func TestLostOutputFails(t *testing.T) {
	s := NewSet("prog")
	s.Register(Command{Name: "careless", Run: func(_ []string, out, _ io.Writer) error {
		fmt.Fprintln(out, "result")
		fmt.Fprintln(out, "more")
		return nil
	}})
	s.Register(Command{Name: "careful", Run: func(_ []string, out, _ io.Writer) error {
		_, err := fmt.Fprintln(out, "result")
		return err
	}})
	for _, name := range []string{"careless", "careful"} {
		var errOut bytes.Buffer
		if code := s.Main([]string{name}, fullWriter{}, &errOut); code != 1 || strings.Count(errOut.String(), "\n") != 1 ||
			!strings.Contains(errOut.String(), "prog "+name+": ") || !strings.Contains(errOut.String(), "no space left on device") {
			t.Errorf("%s: exit %d, stderr %q", name, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := s.Main([]string{"careless"}, &out, &errOut); code != 0 || out.String() != "result\nmore\n" {
		t.Errorf("to a working writer: exit %d, %q %q", code, out.String(), errOut.String())
	}
}

func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	if err := WriteJSON(&b, map[string]any{"a": 1, "b": []int{2}}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}\n"; b.String() != want {
		t.Errorf("WriteJSON wrote %q, want %q", b.String(), want)
	}
	if err := WriteJSON(fullWriter{}, 1); err == nil {
		t.Error("WriteJSON to a full disk: no error")
	}
}

// Define makes the flag set: named for the command, its usage line above
// the defaults on stderr, a usage mistake exiting 2.
func TestDefineMakesFlagSet(t *testing.T) {
	s := NewSet("prog")
	s.Define("greet", "says hello", "usage: prog greet [--name N]", func(fs *flag.FlagSet, args []string, out, _ io.Writer) error {
		name := fs.String("name", "world", "whom to greet")
		if err := ParseNoArgs(fs, args); err != nil {
			return err
		}
		_, err := fmt.Fprintf(out, "%s: hello %s", fs.Name(), *name)
		return err
	})
	var out, errOut bytes.Buffer
	if code := s.Main([]string{"greet", "--name", "you"}, &out, &errOut); code != 0 || out.String() != "greet: hello you" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := s.Main([]string{"greet", "extra"}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "usage: prog greet [--name N]\n") || !strings.Contains(errOut.String(), "whom to greet") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// ParseInterspersedNoArgs reads flags on both sides of a stray argument
// before it refuses the argument with the usage.
func TestParseInterspersedNoArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  error
		n    int
	}{
		{[]string{"-n", "3"}, nil, 3},
		{[]string{"x", "-n", "3"}, ErrUsage, 3},
		{[]string{"-n", "3", "x"}, ErrUsage, 3},
	} {
		var stderr strings.Builder
		fs := Flags("cmd", "usage: cmd [-n N]", &stderr)
		n := fs.Int("n", 0, "a number")
		err := ParseInterspersedNoArgs(fs, c.args)
		if err != c.err || *n != c.n || (err != nil) != strings.Contains(stderr.String(), "usage: cmd") {
			t.Errorf("%q: err %v, n %d, stderr %q; want err %v, n %d", c.args, err, *n, stderr.String(), c.err, c.n)
		}
	}
}
