// Command ledger is the workbench command line: the kernel ledger, correctness
// gates, timed head-to-head runs, end-to-end comparisons, reports and promotion.
package main

import "github.com/damascus-llm/damascus/internal/cli"

// commands are the subcommands; each lives in its own file and adds itself
// in init.
var commands = cli.NewSet("ledger")

// errUsage reports a usage mistake already explained on stderr.
var errUsage = cli.ErrUsage

func main() { commands.Exit() }

// run is the command line without the process: what tests call.
var run = commands.Main
