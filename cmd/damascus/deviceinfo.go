package main

import (
	"context"
	"flag"
	"io"

	"github.com/damascus-llm/damascus/harness/sysinfo"
	"github.com/damascus-llm/damascus/internal/cli"
)

func init() {
	commands.Define("device-info", "print the machine facts benchmarks record (CPU features, AMX, caches, memory, huge pages, OS, GPU)", "usage: damascus device-info [--json]", runDeviceInfo)
}

func runDeviceInfo(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	info := sysinfo.Gather(context.Background())
	if *asJSON {
		return cli.WriteJSON(stdout, info)
	}
	return sysinfo.WriteText(stdout, info)
}
