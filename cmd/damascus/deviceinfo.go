package main

import (
	"context"
	"io"

	"github.com/damascus-llm/damascus/harness/sysinfo"
	"github.com/damascus-llm/damascus/internal/cli"
)

func init() {
	commands.Add("device-info", "print the machine facts benchmarks record (CPU features, AMX, caches, memory, huge pages, OS, GPU)", runDeviceInfo)
}

func runDeviceInfo(args []string, stdout, stderr io.Writer) error {
	fs := cli.Flags("device-info", "usage: damascus device-info [--json]", stderr)
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
