// Command damascus is the inference engine's command line: model inspection,
// tokenization, synthetic models, quantization and generation.
package main

import (
	"io"
	"os"

	"github.com/damascus-llm/damascus/internal/cli"
)

// commands are the subcommands; each lives in its own file and adds itself
// in init.
var commands = cli.NewSet("damascus")

// errUsage reports a usage mistake already explained on stderr.
var errUsage = cli.ErrUsage

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int { return commands.Main(args, stdout, stderr) }
