// Package gounrolled holds the pure-Go rivals of the assembly kernels: the
// same block arithmetic as ggml's scalar code, with loops unrolled over
// independent accumulators and bounds checks hoisted (array-pointer
// indexing) so the compiler emits tight scalar code. They run on every
// architecture and are the yardstick the SIMD families must beat.
//
// Integer dot products are exact within a super-block (or block); only the
// float32 combination across blocks rounds, so results differ from a float64
// reference by float32 summation order alone. QuantizeQ8K and QuantizeQ8_0
// are byte-identical to ggml's reference quantizers (checked against the
// pinned libggml-base).
//
// Every family's tests run the ledger's conformance suite (ledger/ledgertest:
// the gate, float64 references, adversarial block generators, guarded
// outputs, misaligned inputs and the ggml cross-check) over the variants
// they register.
package gounrolled
