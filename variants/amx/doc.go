// Package amx holds the int8 GEMM (matmul) kernels for K-quant weights ×
// Q8_K activations built around Intel AMX tiles, and their AVX-512 VNNI twin
// that runs the same tile program without AMX.
//
// The scheme ("fused dequantize → int8 tiles"): each call unpacks the
// weights of sixteen rows at a time into int8 tile panels (never float or
// bf16), with every sub-block scale folded into the integers. Folding a
// 6-bit scale into a 4-bit quant gives p = q·sc up to 945, too wide for a
// byte, so p is split into two 7-bit digits, p = 128·hi + lo, one tile each:
// every k-chunk of 64 then costs two tile products per output tile but the
// int32 sums run over a whole 256-value super-block without per-sub-block
// rescaling. Per super-block an AVX-512 epilogue combines the digits,
// subtracts the mins (Q4_K) or the −32 offset (Q6_K) through the Q8_K block
// sums (VPDPWSSD), and scales by d·dx into float32 accumulators.
//
// Layouts (see pack.go): the weight panel of one row tile and super-block
// holds, per 64-wide k-chunk, the lo and hi tiles in the VNNI order tile
// products read (16 k-quads × 16 rows × 4 bytes); the activation pack holds,
// per pair of 16-token tiles, the Q8_K quants in 16×64-byte tiles, the
// scales dx and the block sums.
//
// Tile state belongs to the OS thread: one assembly call runs the whole
// LDTILECFG … TILERELEASE sequence for a row tile, so goroutine migration
// never sees live tiles. AMX permission is requested once per process
// through internal/cpufeat.AMX.
package amx
