// Package avx2 holds amd64 assembly kernels for CPUs with AVX2, FMA and
// F16C but not AVX-512: quantized matrix-vector products on 256-bit
// vectors, the rivals of package avx512's. On other architectures, or with
// the noasm build tag, the package is empty and registers nothing.
//
// float_amd64.s (the F32 and F16 matvecs), quant_amd64.s (Q4_K, Q6_K,
// Q8_0) and ops_amd64.s (the row ops) are written by variants/_gen from the
// descriptions they share with variants/avx512's kernels; edit the generator and
// run go generate here, not the .s.
package avx2

//go:generate go run -C ../_gen . -dir ../avx2
