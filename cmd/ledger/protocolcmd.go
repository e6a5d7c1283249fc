package main

import (
	"flag"
	"io"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/protocol"
)

func init() {
	commands.Define("protocol", "print the benchmark protocol, gate thresholds and promotion rule (JSON)", "usage: ledger protocol", runProtocol)
}

func runProtocol(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
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
	return cli.WriteJSON(stdout, doc)
}
