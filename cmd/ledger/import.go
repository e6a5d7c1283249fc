package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
)

func init() {
	commands.Define("import", "append the records of store files (a device run's $OUT/ledger.jsonl) to the store, each in its month's file", "usage: ledger import [--store DIR|FILE] FILE...", runImport)
}

// runImport is how records measured elsewhere join the repository's store:
// a device script writes a single-file store in its output folder, and
// `ledger import` routes its lines, unchanged, into results/ledger/'s month
// files. Records already in the store are left out, so a second import of
// the same file adds nothing.
func runImport(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	store := fs.String("store", record.DefaultStore, "results store to append to: a folder of month files or one .jsonl file")
	files, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fs.Usage()
		return errUsage
	}
	for _, f := range files {
		added, present, err := record.Import(*store, f, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d records added to %s", f, added, *store)
		if present > 0 {
			fmt.Fprintf(stdout, ", %d already there left out", present)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
