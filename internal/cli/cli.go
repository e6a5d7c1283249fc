// Package cli is the subcommand dispatcher shared by the project's commands
// (damascus, ledger): each subcommand lives in its own file and registers
// itself, so adding one never touches the dispatcher.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
)

// ErrUsage reports a usage mistake the subcommand has already explained on
// stderr; Main exits 2 for it without printing anything more.
var ErrUsage = errors.New("usage")

// A Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	Run     func(args []string, stdout, stderr io.Writer) error
}

// A Set is a program's subcommands.
type Set struct {
	prog string
	cmds map[string]Command
}

// NewSet returns an empty set for the program named prog.
func NewSet(prog string) *Set { return &Set{prog: prog, cmds: map[string]Command{}} }

// Register adds c; registering a name twice is a programming error.
func (s *Set) Register(c Command) {
	if _, dup := s.cmds[c.Name]; dup {
		panic(s.prog + ": command registered twice: " + c.Name)
	}
	s.cmds[c.Name] = c
}

// Add registers the subcommand name: its one-line summary and what runs it.
func (s *Set) Add(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	s.Register(Command{Name: name, Summary: summary, Run: run})
}

// Define registers the subcommand name whose flag set the Set makes each
// time it runs: Flags(name, usage, stderr), handed to run with the
// arguments still to parse.
func (s *Set) Define(name, summary, usage string, run func(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error) {
	s.Add(name, summary, func(args []string, stdout, stderr io.Writer) error {
		return run(Flags(name, usage, stderr), args, stdout, stderr)
	})
}

// Lookup returns the subcommand called name.
func (s *Set) Lookup(name string) (Command, bool) {
	c, ok := s.cmds[name]
	return c, ok
}

// Main runs the subcommand args[0] and returns the process exit code: 0 on
// success, 1 when it failed (after printing the error on one line), 2 for a
// usage mistake.
func (s *Set) Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		s.usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := s.cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n", s.prog, args[0])
		s.usage(stderr)
		return 2
	}
	out := &checkedWriter{w: stdout}
	err := c.Run(args[1:], out, stderr)
	if err == nil && out.err != nil {
		// Output that was lost is a failure, whether or not the command
		// looked at what its writes returned.
		err = fmt.Errorf("writing output: %w", out.err)
	}
	if err != nil {
		if errors.Is(err, ErrUsage) || errors.Is(err, flag.ErrHelp) {
			return 2
		}
		fmt.Fprintf(stderr, "%s %s: %v\n", s.prog, c.Name, err)
		return 1
	}
	return 0
}

// Exit runs the process's command line (Main on os.Args) and exits with
// its code: a program's main.
func (s *Set) Exit() { os.Exit(s.Main(os.Args[1:], os.Stdout, os.Stderr)) }

// checkedWriter keeps the first error of the writes to w and fails every
// write after it. It is safe for concurrent use.
type checkedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	c.err = err
	return n, err
}

func (s *Set) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s COMMAND [flags] [args]\n\ncommands:\n", s.prog)
	names := make([]string, 0, len(s.cmds))
	for n := range s.cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, s.cmds[n].Summary)
	}
}

// Flags returns a subcommand's flag set: errors and usage go to stderr, the
// usage being line followed by the flags' defaults.
func Flags(name, line string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, line)
		fs.PrintDefaults()
	}
	return fs
}

// ParseInterspersed parses args into fs with flags allowed before, between
// and after the positional arguments, which it returns in order.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// SplitList returns the elements of a comma-separated list, each trimmed of
// white space, empty ones left out.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseNoArgs parses args into fs and refuses positional arguments: after
// printing the usage it returns ErrUsage.
func ParseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return ErrUsage
	}
	return nil
}

// ParseInterspersedNoArgs is ParseNoArgs with every flag parsed first, as
// ParseInterspersed does: a stray argument is refused only once the flags
// around it have been read.
func ParseInterspersedNoArgs(fs *flag.FlagSet, args []string) error {
	rest, err := ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fs.Usage()
		return ErrUsage
	}
	return nil
}

// WriteJSON writes v to w as the commands print JSON: indented by two
// spaces, one newline at the end.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
