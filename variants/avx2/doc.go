// Package avx2 holds amd64 assembly kernels for CPUs with AVX2, FMA and
// F16C but not AVX-512: quantized matrix-vector products on 256-bit
// vectors, the rivals of package avx512's. On other architectures, or with
// the noasm build tag, the package is empty and registers nothing.
package avx2
