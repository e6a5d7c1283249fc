package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/promoted"
)

func init() {
	commands.Define("list", "list the op catalogue and every registered variant", "usage: ledger list [--ops] [--markdown]", runList)
}

func runList(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	opsOnly := fs.Bool("ops", false, "list the op catalogue (signature, shapes) instead of the variants")
	markdown := fs.Bool("markdown", false, "render Markdown tables")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	render := func(t table.Writer) string {
		if *markdown {
			return t.RenderMarkdown()
		}
		return t.Render()
	}
	t := table.NewWriter()
	if *opsOnly {
		t.AppendHeader(table.Row{"op", "signature", "summary", "shapes"})
		for _, op := range ledger.Catalogue() {
			var keys []string
			for _, s := range op.Shapes {
				keys = append(keys, s.Label(op.Kind))
			}
			t.AppendRow(table.Row{op.Name, "ledger." + op.Kind.String(), op.Summary, strings.Join(keys, ", ")})
		}
		fmt.Fprintln(stdout, render(t))
		return nil
	}
	prefs, err := promoted.Embedded()
	if err != nil {
		return err
	}
	t.AppendHeader(table.Row{"op", "variant", "family", "features", "here", "status", "preference", "engine uses", "notes"})
	for _, v := range ledger.All() {
		here := "yes"
		if miss := v.Missing(); len(miss) > 0 {
			here = "no (" + strings.Join(miss, ", ") + ")"
		}
		rank := "–"
		for i, c := range prefs.Ops[v.Op] {
			if c.Variant == v.Name {
				rank = fmt.Sprintf("#%d", i+1)
				if c.Evidence != "" {
					rank += " (" + c.Evidence + ")"
				}
			}
		}
		uses := ""
		if chosen, err := promoted.Default().Resolve(v.Op); err == nil && chosen.Name == v.Name {
			uses = "✓"
		}
		t.AppendRow(table.Row{v.Op, v.Name, string(v.Family), strings.Join(v.Features, " "), here, string(v.Status), rank, uses, v.Notes})
	}
	fmt.Fprintln(stdout, render(t))
	return nil
}
