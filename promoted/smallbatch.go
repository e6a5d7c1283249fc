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

// smallBatchRows is, per processor (a CPUKey: vendor/family, else the
// vendor alone), the most rows of a prefill step that
// go through the batched decode kernel (op matvec_batch: each chunk of
// weight rows read as stored, once for up to 8 tokens at a time, no
// repacking) instead of the matmul (op matmul: the weights unpacked into
// panels for the tile program once per call, which only pays off over
// enough tokens). Issue 19 item 4: the crossover by rows. Measured values
// only; a vendor without one (and an unknown one) keeps the matmul at
// every batch of more than one row.
//
// AuthenticAMD: the 2-vCPU Zen 4 dev VM (family 25; no AMX), 2 threads, 3B Q4_K_M,
// measured over the promoted bundle one-all (the batched product
// avx512-vnni-r16-m4 against the matmul avx512-vnni-sub-r16, both on the
// interleaved layout): `ledger ab` runs 20261204T154124Z-16acf4 (128
// against 32, 10 rounds: pp48 +6.6 % (p 0.09), pp64 +11 % (p 0.015),
// pp96 +1 %, pp128 +9 % (p 0.03)) and 20261204T154713Z-62d7e0 (256 and
// 512: +4 to +6 % at pp192-pp512, none significant). With the stored
// kernels (the bundle overridden) the crossover was 32 (results/README.md,
// issue 19 short prompts; on a Zen 5 VM). On Zen 5 (family 26) with its
// bundle one-all-hmx-nta8k the same 128 holds (run 20261205T043037Z-853852,
// 3B, 8 rounds: 32 rows lose pp64 by 8 % (p 2e-4), 256 level at pp32-pp256),
// so the vendor's entry serves both families.
//
// GenuineIntel: the lent device's 16-core Xeon with AMX (the matmul is
// amx-int8-il), 2 threads, `ledger damascus-bench -p 8,16,32,64 -r 3` at
// each crossover (results/device/20261203-s17-calls.txt): 8-row steps 2x
// faster through the batched decode kernel (1B 54 -> 101-106 tok/s, 3B
// 19 -> 36-40), 16 rows level to +14%, 32 rows 36-40% slower (the AMX
// tiles are 16 rows deep and already pay off there). Measured with AMX
// only: an Intel processor without it runs the AMD path's matmul and may
// want AuthenticAMD's value. The Intel suite (scripts/device-suite.sh, all
// three legs) passed with DAMASCUS_SMALL_BATCH=16 on the host (session 18).
//
// GenuineIntel 48 since session 39, with the Intel bundle hyb (the AMX
// short-step kernels amx-int8-r16sw-f8 and -r16s-f8: one TDPBSUD a
// sub-block, no digit split), measured on an Intel dev VM (family 6, AMX,
// 2 vCPUs) against 16 with the bundles before it, `ledger ab`, 2 threads:
// 1B, 10 rounds (run 20261206T071545Z-379917) pp16 +36.9 %, pp32 +25.4 %
// (p 2e-5), pp48 +4.2 % (p 0.12), pp64 level (the matmul in both arms);
// 3B, 8 rounds (run 20261206T071619Z-ea6674) pp16 +40.7 %, pp32 +31.8 %,
// pp48 +17.9 % (p 0.007); with -r16s instead of the hybrid at 48 (run
// 20261206T070633Z-628a75) 1B pp48 +7.6 % (p 0.0015). On the lent
// device's older Xeon (model 207) -r16s was level with the matmul at 16
// and 32 tokens (session 32, run …799154): 48 is the dev VM's value.
var smallBatchRows = map[string]int{
	"AuthenticAMD": 128,
	"GenuineIntel": 48,
}

// SmallBatchRows returns the most rows of a prefill step that the engine
// sends through the batched decode kernel rather than the matmul on this
// processor: $DAMASCUS_SMALL_BATCH when set, else the measured value for
// the processor's vendor (0 when there is none).
func (d *Dispatcher) SmallBatchRows() (int, error) {
	if n, ok, err := envRows(SmallBatchEnv, 0, 1, "a count of rows (0: off)"); ok || err != nil {
		return n, err
	}
	if n, ok := smallBatchRows[d.cpu]; ok {
		return n, nil
	}
	return smallBatchRows[CPUVendor(d.cpu)], nil
}

// SmallBatchRows is Default().SmallBatchRows.
func SmallBatchRows() (int, error) {
	if err := Validate(); err != nil {
		return 0, err
	}
	return Default().SmallBatchRows()
}

// BatchChunkEnv names the environment variable that overrides
// BatchChunkRows, e.g. DAMASCUS_BATCH_CHUNK=128: a knob for sweeping it in
// the engine (`ledger ab --arm-batch-chunk`), not a setting of record.
const BatchChunkEnv = "DAMASCUS_BATCH_CHUNK"

// DefaultBatchChunkRows is the weight rows per dealt chunk of a prefill
// matmul over a prepared batch: four row tiles of the tile kernels. A
// chunk of the 3B's up projection at 1024 tokens is then about 1.5 ms of
// tile work, so taking one costs nothing next to it, while a matrix is
// still 16 to 128 chunks for the workers to even out. Not swept yet (issue
// 19 item 2); a measured value per vendor would go beside smallBatchRows.
const DefaultBatchChunkRows = 64

// BatchChunkRows returns the weight rows per dealt chunk of a prefill
// matmul over a prepared batch: $DAMASCUS_BATCH_CHUNK when set (a positive
// multiple of 16, the tile kernels' row tile), else DefaultBatchChunkRows.
func BatchChunkRows() (int, error) {
	if n, ok, err := envRows(BatchChunkEnv, 16, 16, "a positive multiple of 16 rows"); ok || err != nil {
		return n, err
	}
	return DefaultBatchChunkRows, nil
}

// DealRunEnv names the environment variable that overrides DealRunChunks,
// e.g. DAMASCUS_DEAL_RUN=4: a knob for sweeping it in the engine (`ledger
// ab --arm-deal-run`).
const DealRunEnv = "DAMASCUS_DEAL_RUN"

// dealRunChunks is, per processor (a CPUKey), the most chunks of a
// decode step's matvec rows (256 KiB of weights each) a worker takes from
// its share at once: a quarter of what is left of it, up to this many
// (guided self-scheduling; pool.Dealer.NextRun), so the calls are long
// while much is left and single chunks near the end. Taking a chunk is a
// compare-and-swap, a full fence that drains the core's loads in flight
// between two calls: fewer, longer calls might keep the stream going.
// Measured values only; elsewhere 1 (a chunk a call, as before). Zen 5
// (family 26), 3B tg64, 16 rounds of `ledger ab` (run
// 20261205T092833Z-dad4d5): runs of 4 −1.6 % (paired 0.996×), of 8 −0.6 %
// (0.990×), neither significant (an unrecorded script had put 4 at +4.6 %
// over 26 rounds): level, so 1 stays. Not yet tried on Intel.
var dealRunChunks = map[string]int{}

// DealRunChunks returns the most chunks a worker takes at once in a decode
// step: $DAMASCUS_DEAL_RUN when set, else the measured value for the
// processor (1 without one).
func (d *Dispatcher) DealRunChunks() (int, error) {
	if n, ok, err := envRows(DealRunEnv, 1, 1, "a positive count of chunks"); ok || err != nil {
		return n, err
	}
	if n, ok := dealRunChunks[d.cpu]; ok {
		return n, nil
	}
	if n, ok := dealRunChunks[CPUVendor(d.cpu)]; ok {
		return n, nil
	}
	return 1, nil
}

// DealRunChunks is Default().DealRunChunks.
func DealRunChunks() (int, error) {
	if err := Validate(); err != nil {
		return 0, err
	}
	return Default().DealRunChunks()
}

// envRows reads a count of rows from the environment variable name: ok
// when it is set and not empty, an error naming it and want unless it is
// an integer of at least least and a multiple of mult.
func envRows(name string, least, mult int, want string) (n int, ok bool, err error) {
	s, set := os.LookupEnv(name)
	if !set || s == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < least || n%mult != 0 {
		return 0, true, fmt.Errorf("%s=%q: want %s", name, s, want)
	}
	return n, true, nil
}
