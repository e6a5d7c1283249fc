package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/protocol"
)

func init() {
	register(command{name: "protocol", summary: "print the benchmark protocol, gate thresholds and promotion rule (JSON)", run: runProtocol})
}

func runProtocol(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("protocol", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: ledger protocol")
		return errUsage
	}
	kernel := protocol.DefaultKernel()
	kernel.ColdWeightBytes = workload.ColdBytes
	thresholds := map[string]gate.Thresholds{}
	for _, op := range ledger.Catalogue() {
		thresholds[op.Name] = gate.For(op)
	}
	doc := struct {
		LlamaCpp   protocol.LlamaCpp          `json:"llama_cpp"`
		E2E        protocol.E2E               `json:"e2e"`
		Kernel     protocol.Kernel            `json:"kernel"`
		Rule       protocol.Rule              `json:"promotion_rule"`
		GateBatch  int                        `json:"gate_matmul_batch"`
		Thresholds map[string]gate.Thresholds `json:"gate_thresholds"`
	}{
		LlamaCpp:   protocol.LlamaCpp{Revision: protocol.LlamaCppRevision, Package: protocol.LlamaCppPackage},
		E2E:        protocol.DefaultE2E(),
		Kernel:     kernel,
		Rule:       protocol.DefaultRule(),
		GateBatch:  gate.GateBatch,
		Thresholds: thresholds,
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
