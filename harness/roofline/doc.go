// Package roofline measures the ceilings kernel results are judged against:
// memory read bandwidth (an AVX-512 read-only sweep over a large buffer, on
// 4 KiB pages and on transparent huge pages) and peak compute of each
// instruction family (AVX-512 FP32 FMA, AVX-512 VNNI int8, AMX-INT8,
// AMX-BF16) from register- or tile-resident loops.
//
// Every probe either measures or says why it did not (Measurement.Skipped);
// nothing is estimated. The harness records a Report beside its results so a
// kernel's GB/s or GFLOP/s can be read as a fraction of what this machine did.
package roofline
