// Command damascus is the inference engine's command line: model inspection,
// tokenization, synthetic models, quantization and generation.
package main

import (
	"io"
	"os"

	"github.com/damascus-llm/damascus/internal/cli"
)

// command is one subcommand; each lives in its own file and registers
// itself in init.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = cli.NewSet("damascus")

func register(c command) {
	commands.Register(cli.Command{Name: c.name, Summary: c.summary, Run: c.run})
}

// errUsage reports a usage mistake already explained on stderr.
var errUsage = cli.ErrUsage

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int { return commands.Main(args, stdout, stderr) }
