// Package ledger is the workbench's root: the one kernel contract (kernel.go:
// the signature of each op kind, which the engine calls through promoted/
// and every variant implements), the ops and their shapes (op.go,
// catalogue.go), and the registry in which every variant of every family —
// naive Go, unrolled Go, AVX2, AVX-512, NEON, AMX, CUDA — registers itself
// from its package's init, winners and losers alike (registry.go). The
// flow a variant takes from here: gate (ledger/gate) → time
// (harness/kernelrun) → record (harness/record) → promote (promoted/promote).
package ledger
