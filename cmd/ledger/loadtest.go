package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"time"

	"github.com/damascus-llm/damascus/harness/loadtest"
	"github.com/damascus-llm/damascus/harness/sysinfo"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/serve"
)

// `ledger loadtest` starts damascus serve's server in this process on
// 127.0.0.1 (a free port), drives it with many streaming clients until
// every request is answered, then stops it; the figures go to stdout and,
// with -o, to a JSON file beside the machine and the options.
func init() {
	commands.Define("loadtest", "load-test damascus serve on 127.0.0.1: concurrent streaming clients, p50/p99 latency and time to first token", "usage: ledger loadtest -m MODEL [--parallel 16] [--clients 64] [--requests 1000] [--max-tokens 16] [-o FILE]", runLoadTest)
}

// loadPrompts are short completions of assorted lengths.
var loadPrompts = []string{
	"Once upon a time", "The capital of France is", "Write a haiku about the sea.",
	"In 1969, the first humans walked on the moon. The mission was called", "List three colours:",
	"def fibonacci(n):", "The quick brown fox jumps over the lazy dog. The quick brown fox",
	"Q: What is two plus two?\nA:",
}

func runLoadTest(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var ff figureFlags
	ff.register(fs, "write the figures as JSON to this `file` (e.g. results/serve-load-….json)", "operator note recorded with the figures (e.g. other jobs on the machine)")
	parallel := cli.Int(fs, "parallel", 16, 1, 1024, "server slots")
	clients := cli.Int(fs, "clients", 64, 1, 4096, "concurrent clients")
	requests := cli.Int(fs, "requests", 1000, 1, math.MaxInt32, "requests in all")
	maxTokens := cli.Int(fs, "max-tokens", 16, 1, 4096, "max_tokens of each request")
	ctxSize := cli.Int(fs, "ctx-size", 256, 16, 1<<20, "positions of each slot")
	batch := cli.Int(fs, "batch-size", 256, 1, 1<<20, "most tokens one step takes")
	threads := cli.Int(fs, "threads", 0, 0, llama.MaxThreads, "worker threads (0: all cores)")
	ld, err := ff.parseAndLoad(fs, args)
	if err != nil {
		return err
	}
	defer ld.Close()
	opts := llama.Options{NCtx: *ctxSize, NBatch: max(*batch, *parallel), Threads: *threads}
	cfg := serve.Config{Model: "load", Vocab: ld.Model.Config.Vocab, Tokenizer: ld.Tokenizer, MaxQueue: *clients, MaxBody: 1 << 20}
	if *parallel == 1 {
		c, err := ld.Model.NewContext(opts)
		if err != nil {
			return err
		}
		defer c.Close()
		cfg.Context = c
	} else {
		b, err := ld.Model.NewBatch(opts, *parallel)
		if err != nil {
			return err
		}
		defer b.Close()
		cfg.Batch = b
	}
	srv, err := serve.New(cfg)
	if err != nil {
		return err
	}
	before := runtime.NumGoroutine()
	l, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.HTTP.Close()
	url := "http://" + l.Addr.String()
	fmt.Fprintf(stderr, "loadtest: %s, %d slots on %s; %d clients, %d requests of %d tokens\n",
		filepath.Base(ff.model), *parallel, url, *clients, *requests, *maxTokens)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	lo := loadtest.Options{URL: url, Model: "load", Clients: *clients, Requests: *clients, MaxTokens: *maxTokens, Prompts: loadPrompts}
	// A warm-up pass of one request a client (not counted) fills the
	// caches and pools, so that the heap measured after it and after the
	// timed requests tells growth with requests from start-up cost.
	if _, err := loadtest.Run(ctx, lo); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	heapWarm := heapInUseMiB()
	lo.Requests = *requests
	r, err := loadtest.Run(ctx, lo)
	if err != nil {
		return err
	}
	heapAfter := heapInUseMiB()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	_ = l.HTTP.Shutdown(sctx)
	// What is left once the server is down: the scheduler and the
	// connections' goroutines must be gone (a leak grows with requests).
	after := runtime.NumGoroutine()
	for t := time.Now(); after > before && time.Since(t) < 5*time.Second; after = runtime.NumGoroutine() {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(stdout, "requests %d, errors %d, wall %.1f s, %.2f req/s, %.1f completion tok/s\n",
		r.Requests, r.Errors, r.WallSeconds, r.RequestsPerSecond, r.TokensPerSecond)
	fmt.Fprintf(stdout, "latency p50 %.0f ms, p99 %.0f ms; time to first token p50 %.0f ms, p99 %.0f ms\n",
		r.LatencyP50, r.LatencyP99, r.TTFTP50, r.TTFTP99)
	fmt.Fprintf(stdout, "goroutines %d before the server, %d after it stopped\n", before, after)
	fmt.Fprintf(stdout, "Go heap in use after a GC: %.1f MiB after the warm-up, %.1f MiB after the %d requests\n", heapWarm, heapAfter, r.Requests)
	if ff.out != "" { // the machine's facts are gathered only when written
		info := sysinfo.Gather(ctx)
		rec := map[string]any{"parallel": *parallel, "ctx_size": *ctxSize, "batch_size": opts.NBatch, "threads": *threads,
			"goroutines_before": before, "goroutines_after": after,
			"heap_mib_after_warmup": heapWarm, "heap_mib_after": heapAfter, "cpu": info.CPU.Model, "logical_cpus": info.CPU.LogicalCPUs, "commit": info.Repo, "result": r}
		if err := ff.writeFigures("loadtest", rec); err != nil {
			return err
		}
	}
	if r.Errors > 0 {
		return fmt.Errorf("%d of %d requests failed; the first: %s", r.Errors, r.Requests, r.FirstError)
	}
	if after > before {
		return fmt.Errorf("%d goroutines after the server stopped, %d before it started: a leak", after, before)
	}
	return nil
}

// heapInUseMiB is the Go heap in use after a collection, in MiB.
func heapInUseMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}
