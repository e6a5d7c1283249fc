// Package gounrolled holds the pure-Go rivals of the assembly kernels: the
// same block arithmetic as ggml's scalar code, with loops unrolled and bounds
// checks hoisted so the compiler emits tight scalar code. They run on every
// architecture and are the yardstick the SIMD families must beat.
//
// Integer dot products are exact within a super-block (or block); only the
// float32 combination across blocks rounds, so results differ from a float64
// reference by float32 summation order alone.
package gounrolled
