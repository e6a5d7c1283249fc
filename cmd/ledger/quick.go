package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cli"
)

func init() {
	commands.Define("quick", "the main job (make run): kernel ledger on the 1B shapes, end to end vs llama.cpp, report", "usage: ledger quick [kernel flags] [e2e flags] [--no-e2e]", runQuick)
}

// quickOps are the decode-path ops timed by default: matmul is left to the
// end-to-end prefill test (its naive variant alone would take minutes).
const quickOps = "matvec/q4_k,matvec/q6_k,matvec/q8_0,quantize/q8_k,rmsnorm,silu_mul,softmax,rope,attention"

func runQuick(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var kf kernelFlags
	kf.register(fs, quickOps)
	var ef e2eFlags
	ef.register(fs, true)
	skipE2E := fs.Bool("no-e2e", false, "kernel ledger only")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "== kernel ledger (Llama 3.2 1B shapes) ==")
	if _, err := kernelLedger(append([]string{"quick"}, args...), kf, stdout, stderr); err != nil {
		return err
	}
	var e2eErr error
	if !*skipE2E {
		fmt.Fprintln(stdout, "\n== end to end: Damascus beside llama.cpp ==")
		ef.store, ef.opts.Note, ef.opts.NoRoofline = kf.store, kf.note, kf.noRoofline
		if e2eErr = endToEnd(append([]string{"quick"}, args...), ef, stdout, stderr); e2eErr != nil {
			e2eErr = fmt.Errorf("end to end: %w", e2eErr)
			fmt.Fprintln(stderr, "ledger quick:", e2eErr)
		} else {
			fmt.Fprintf(stdout, quickReading, ef.opts.Protocol.Runs, ef.opts.Protocol.PromptTokens, ef.opts.Protocol.GenTokens, ef.opts.Protocol.Threads)
		}
	}
	if kf.store != "" {
		fmt.Fprintln(stdout)
		if err := report(kf.store, record.Home(kf.store), stdout, stderr); err != nil {
			return errors.Join(e2eErr, err)
		}
	}
	return e2eErr // the kernel ledger is recorded and reported either way
}

// quickReading says what the main job's end-to-end table means.
const quickReading = `
How to read the end-to-end table: tok/s are medians of %d interleaved rounds
(each round starts a fresh process per engine, in alternating order); p95 is
the slow side of the samples. The ratio is Damascus's median over
llama.cpp's, and the per-round ratio (with its range) pairs runs of the same
round, so a machine that slowed down for a while moves both engines. The
llama.cpp row is the better, per test, of its default CPU variant with and
without its weights on huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1):
the rival at its best on this machine. This is the quick protocol (a
synthetic Llama 3.2 1B Q4_K_M, pp%d and tg%d, %d threads); the numbers of
record use 'ledger e2e' (pp1024, tg256, 10 rounds, 2 threads) and are in
results/baseline.md.
`
