package main

import "github.com/damascus-llm/damascus/harness/llamacpp"

// `ledger llama-bench` runs the pinned llama.cpp like llama-bench in this
// process and prints the result as JSON. llamacpp.RunBench spawns it, so the
// measurement gets a fresh process whose environment (GLIBC_TUNABLES for huge
// pages) and ggml CPU variant are fixed from the start.
func init() {
	commands.Add(llamacpp.BenchCommand, "benchmark the pinned llama.cpp (ppN/tgN, JSON on stdout)", llamacpp.BenchMain)
}
