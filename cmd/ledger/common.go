package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/kernelrun"
	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/harness/sysinfo"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
)

// Importing promoted registers every variant family.
var _ = promoted.Default

// selection holds the flags that pick ops, variants and shapes.
type selection struct {
	ops, variants, shapes string
	seed                  uint64
}

func (s *selection) register(fs *flag.FlagSet, defOps, defShapes string) {
	fs.StringVar(&s.ops, "op", defOps, "comma-separated op names or prefixes (e.g. matvec/q4_k,matvec/); empty: all")
	fs.StringVar(&s.variants, "variant", "", "comma-separated variant names; empty: all")
	fs.StringVar(&s.shapes, "shapes", defShapes, "shapes: all, tails, real, 1B or 3B (a model's shapes plus the tails)")
	fs.Uint64Var(&s.seed, "seed", 1, "seed of the generated inputs")
}

func (s *selection) parse() (ops, variants []string, shapes gate.Shapes, err error) {
	switch strings.ToLower(s.shapes) {
	case "all", "":
		shapes = gate.AllShapes
	case "tails":
		shapes = gate.TailShapes
	case "real":
		shapes = gate.RealShapes
	case "1b", "3b":
		shapes = gate.Shapes(strings.ToUpper(s.shapes))
	default:
		return nil, nil, "", fmt.Errorf("unknown --shapes %q (all, tails, real, 1B, 3B)", s.shapes)
	}
	ops, variants = cli.SplitList(s.ops), cli.SplitList(s.variants)
	selected := gate.Selected(ops)
	if len(selected) == 0 {
		return nil, nil, "", fmt.Errorf("--op %q matches no op of the catalogue (see ledger list)", s.ops)
	}
	// A misspelt or retired variant must not quietly leave the run with the
	// others only.
	for _, name := range variants {
		found := false
		for _, op := range selected {
			if _, ok := ledger.Default.Lookup(op.Name, name); ok {
				found = true
				break
			}
		}
		if !found {
			scope := "any op"
			if s.ops != "" {
				scope = fmt.Sprintf("the ops %q", s.ops)
			}
			return nil, nil, "", fmt.Errorf("--variant %q is no variant of %s (see ledger list)", name, scope)
		}
	}
	return ops, variants, shapes, nil
}

// runRecord describes this invocation: command line, machine, protocol.
func runRecord(args []string, kernel *protocol.Kernel) *record.Run {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := protocol.Record{Date: time.Now().UTC(), Machine: sysinfo.Gather(ctx), Kernel: kernel}
	return &record.Run{Command: "ledger " + strings.Join(args, " "), Protocol: p}
}

// bar is a progress report on w that can be advanced to an absolute count
// (redrawn on a terminal, a few plain lines elsewhere: cli.Progress).
type bar struct{ p *cli.Progress }

func newBar(w io.Writer, total int, desc string) *bar {
	return &bar{p: cli.NewProgress(w, int64(total), desc, false)}
}

func (b *bar) set(done int, desc string) { b.p.Set(int64(done), desc) }

// progress returns a kernelrun progress callback drawing one bar per phase
// (gate, then time), each made at its phase's first event.
func progress(w io.Writer) func(kernelrun.Event) {
	bars := map[string]*bar{}
	return func(e kernelrun.Event) {
		if e.Phase != "gate" && e.Phase != "time" {
			return
		}
		desc := fmt.Sprintf("%-5s %-16s %-14s", e.Phase, e.Op, e.Shape)
		if bars[e.Phase] == nil {
			bars[e.Phase] = newBar(w, e.Total, desc)
		}
		bars[e.Phase].set(e.Done, desc)
	}
}
