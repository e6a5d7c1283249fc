package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/internal/cli"
)

// `ledger probe` runs the roofline probes (memory bandwidth on 4 KiB and huge
// pages, peak FP32 FMA, VNNI, AMX-INT8 and AMX-BF16) and prints them.
func init() {
	commands.Define("probe", "measure this machine's roofline: memory bandwidth and peak compute", "usage: ledger probe [--json] [--mem MiB] [--threads 1,2] [--repeats N] [--compute-ms MS]", runProbe)
}

func runProbe(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	memMiB := fs.Int64("mem", 1024, "memory probe buffer in MiB")
	threads := fs.String("threads", "", "comma-separated thread counts (default 1, 2, 4, … GOMAXPROCS)")
	repeats := fs.Int("repeats", 5, "timed repeats per point")
	computeMS := fs.Int("compute-ms", 200, "duration of one compute repeat in milliseconds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *memMiB <= 0 || *repeats <= 0 || *computeMS <= 0 {
		fs.Usage()
		return errUsage
	}
	opt := roofline.Options{MemBytes: *memMiB << 20, Repeats: *repeats, ComputeTime: time.Duration(*computeMS) * time.Millisecond}
	if *threads != "" {
		for _, s := range strings.Split(*threads, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "ledger probe: bad thread count %q\n", s)
				return errUsage
			}
			opt.Threads = append(opt.Threads, n)
		}
	}
	report := roofline.Run(opt)
	if *asJSON {
		return cli.WriteJSON(stdout, report)
	}
	return report.WriteText(stdout)
}
