// Command damascus is the inference engine's command line: model inspection,
// tokenization, synthetic models, quantization and generation.
package main

import "github.com/damascus-llm/damascus/internal/cli"

// commands are the subcommands; each lives in its own file and adds itself
// in init.
var commands = cli.NewSet("damascus")

// errUsage reports a usage mistake already explained on stderr.
var errUsage = cli.ErrUsage

func main() { commands.Exit() }

// run is the command line without the process: what tests call.
var run = commands.Main
