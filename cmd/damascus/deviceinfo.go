package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/damascus-llm/damascus/harness/sysinfo"
)

func init() {
	register(command{name: "device-info", summary: "print the machine facts benchmarks record (CPU features, AMX, caches, memory, huge pages, OS, GPU)", run: runDeviceInfo})
}

func runDeviceInfo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("device-info", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: damascus device-info [--json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	info := sysinfo.Gather(context.Background())
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return info.WriteText(stdout)
}
