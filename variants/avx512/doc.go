// Package avx512 holds amd64 assembly kernels that use AVX-512 (F, BW, VL,
// and where named VNNI and BF16): quantized and float matrix-vector products
// for the decode hot path. On other architectures, or with the noasm build
// tag, the package is empty and registers nothing.
package avx512
