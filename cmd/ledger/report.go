package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
)

func init() {
	commands.Define("report", "render results: baseline.md, benchstat files, SVG sweep charts", "usage: ledger report [--store DIR|FILE] [--out DIR]", runReport)
}

func runReport(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	store := fs.String("store", record.DefaultStore, "results store to read: a folder of month files or one .jsonl file")
	out := fs.String("out", "", "directory to write baseline.md, bench/ and charts/ into (default: the directory holding the store)")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	if *out == "" {
		*out = record.Home(*store)
	}
	return report(*store, *out, stdout, stderr)
}

// report renders the store into dir and prints the latest tables; damaged
// lines of the store are skipped with a warning on stderr.
func report(store, dir string, stdout, stderr io.Writer) error {
	recs, err := record.LoadSkippingDamaged(store, stderr)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no results: %s does not exist (run `ledger run` or `ledger quick` first, or check --store)", store)
	}
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("no results in %s yet: run `ledger run` or `ledger quick` first", store)
	}
	inputs, err := record.Files(store) // outputs must not replace them
	if err != nil {
		return err
	}
	var doc bytes.Buffer
	if err := record.WriteBaseline(&doc, recs); err != nil {
		return err
	}
	baseline := filepath.Join(dir, "baseline.md")
	if err := outfile.WriteFile(baseline, doc.Bytes(), inputs...); err != nil {
		return err
	}
	written := []string{baseline}
	for _, kind := range []record.Kind{record.KindKernel, record.KindE2E} {
		latest := record.LatestRun(recs, kind)
		if len(latest) == 0 {
			continue
		}
		path := filepath.Join(dir, "bench", latest[0].RunID+".txt")
		if err := writeBenchFile(path, latest); err != nil {
			return err
		}
		written = append(written, path)
	}
	kern := record.LatestRun(recs, record.KindKernel)
	seen := map[string]bool{}
	for _, r := range kern {
		if r.Kernel == nil || seen[r.Kernel.Op] {
			continue
		}
		seen[r.Kernel.Op] = true
		c, ok := record.KernelChart(kern, r.Kernel.Op)
		if !ok {
			continue
		}
		c.Subtitle += " · run " + r.RunID
		path := filepath.Join(dir, "charts", strings.ReplaceAll(r.Kernel.Op, "/", "_")+".svg")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		var svg bytes.Buffer
		if err := c.WriteSVG(&svg); err != nil {
			return err
		}
		if err := outfile.WriteFile(path, svg.Bytes(), inputs...); err != nil {
			return err
		}
		written = append(written, path)
	}
	if e2e := record.LatestRun(recs, record.KindE2E); len(e2e) > 0 {
		fmt.Fprintln(stdout, record.BaselineTable(e2e).Render())
	}
	fmt.Fprintln(stdout, "wrote:")
	for _, w := range written {
		fmt.Fprintln(stdout, "  "+w)
	}
	return nil
}
