package promoted

import (
	"fmt"
	"os"
	"strconv"
)

// SmallBatchEnv names the environment variable that overrides
// SmallBatchRows, e.g. DAMASCUS_SMALL_BATCH=32 (0: every prefill batch of
// more than one row through the matmul, as before the crossover).
const SmallBatchEnv = "DAMASCUS_SMALL_BATCH"

// smallBatchRows is, per CPUID vendor, the most rows of a prefill step that
// go through the batched decode kernel (op matvec_batch: each chunk of
// weight rows read as stored, once for up to 8 tokens at a time, no
// repacking) instead of the matmul (op matmul: the weights unpacked into
// panels for the tile program once per call, which only pays off over
// enough tokens). Issue 19 item 4: the crossover by rows. Measured values
// only; a vendor without one (and an unknown one) keeps the matmul at
// every batch of more than one row.
//
// AuthenticAMD: the 2-vCPU Zen 5 dev VM (no AMX: the matmul is
// avx512-vnni-sub), 2 threads, 3B and 1B Q4_K_M; see results/README.md,
// issue 19 short prompts.
//
// GenuineIntel: not measured yet (the matmul there is amx-int8-il): set it
// from a device run of scripts/device-e2e.sh's short-prompts phase with
// DAMASCUS_SMALL_BATCH swept (results/README.md says how).
var smallBatchRows = map[string]int{
	"AuthenticAMD": 32,
}

// SmallBatchRows returns the most rows of a prefill step that the engine
// sends through the batched decode kernel rather than the matmul on this
// processor: $DAMASCUS_SMALL_BATCH when set, else the measured value for
// the processor's vendor (0 when there is none).
func (d *Dispatcher) SmallBatchRows() (int, error) {
	if s, ok := os.LookupEnv(SmallBatchEnv); ok && s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: want a count of rows (0: off)", SmallBatchEnv, s)
		}
		return n, nil
	}
	return smallBatchRows[d.vendor], nil
}

// SmallBatchRows is Default().SmallBatchRows.
func SmallBatchRows() (int, error) {
	if err := Validate(); err != nil {
		return 0, err
	}
	return Default().SmallBatchRows()
}
