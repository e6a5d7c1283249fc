// Package avx512 holds amd64 assembly kernels that use AVX-512 (F, BW, VL,
// and where named VNNI and BF16) for the decode hot path, each registered
// in the ledger next to its code:
//
//   - matvec Q4_K×Q8_K and Q6_K×Q8_K: "avx512" (VPMADDUBSW + VPMADDWD),
//     "avx512-vnni" (VPMADDUBSW + VPDPWSSD), "avx512-vnni-4row" (four rows
//     per pass sharing the activations), "avx512-vnni-prefetch" (software
//     prefetch 2 KiB ahead);
//   - batched decode (matvec_batch) Q4_K and Q6_K: "avx512-vnni" and its
//     prefetching forms "avx512-vnni-pfNk", up to 8 tokens per pass over
//     each weight super-block as stored, every token bit for bit the
//     avx512-vnni matvec's;
//   - matvec Q5_K×Q8_K: "avx512-vnni" (-pf4k, -pf8k-nta), Q4_K's kernel
//     with the fifth bits added by VPTESTMB and a masked VPADDB; its
//     batched kernel "avx512-vnni" (matvec_batch, and matmul: Q5_K's
//     prefill); both generated (variants/_gen);
//   - matvec Q8_0×Q8_0: "avx512" and "avx512-vnni" (sign trick); Q4_0×Q8_0
//     "avx512-vnni" (q40_amd64.s, by hand: nibbles unpacked in place,
//     VPDPBUSD less VPDPBUSD of 8s);
//   - matvec F32, F16 and BF16 ("avx512"; BF16 also "avx512-bf16" with
//     VDPBF16PS, BYTE-encoded);
//   - activation quantizers to Q8_K and Q8_0, byte-identical to ggml's
//     quantize_row_*_ref;
//   - rmsnorm, silu·mul, softmax, rope and decode attention over the KV cache;
//   - prefill (batched) attention: "avx512" in float32, and "avx512-bf16" /
//     "avx512-f16" with the roundings of llama.cpp's graph over a 16-bit KV
//     cache (the engine's attention for such a cache where AMX is absent,
//     and for its decode);
//   - dequantize F16 and BF16 ("avx512"), which widens a 16-bit cache's rows.
//
// Integer paths are exact within a block; tests compare every kernel with a
// float64 reference over adversarial blocks, tails and misaligned inputs,
// and with the pinned llama.cpp's own vec_dot when it is installed.
// Benchmarks (single-threaded) report weight GB/s:
//
//	go test -run '^$' -bench 'MatVec/type=q4_k' ./variants/avx512
//
// On other architectures, or with the noasm build tag, the package is empty
// and registers nothing.
//
// One experiment is not (yet) a ledger variant: q4kr16.go, Q4_K rows
// interleaved 16 to a vector and its decode kernel (issues 19 and 20); the
// kernel contract has no seam for a layout built at load so far. It is
// tested against the float64 dot and streamed beside the shipped kernels by
// harness/roofline's BenchmarkReadMix.
//
// The files with a "Code generated" header (the Q4_K, Q6_K, Q8_0 and float
// matvecs, the batched decode products, the row ops) are written by variants/_gen from one description
// of each kernel; edit the generator and run go generate here, not the .s.
package avx512

//go:generate go run -C ../_gen . -dir ../avx512
