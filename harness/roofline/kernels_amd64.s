//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"
#include "../../variants/avx512/lanes_amd64.h"
#include "kernels_amd64.h"

// func readSweep(p *byte, n int) uint64
// Reads n bytes (a multiple of 512) with AVX-512 loads and returns the sum of
// all uint64 words, so the tests can check every byte was read.
TEXT ·readSweep(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $9, CX
	ZERO_Z0_Z3
	TESTQ CX, CX
	JZ    done
loop:
	VPADDQ 0(SI), Z0, Z0
	VPADDQ 64(SI), Z1, Z1
	VPADDQ 128(SI), Z2, Z2
	VPADDQ 192(SI), Z3, Z3
	VPADDQ 256(SI), Z0, Z0
	VPADDQ 320(SI), Z1, Z1
	VPADDQ 384(SI), Z2, Z2
	VPADDQ 448(SI), Z3, Z3
	ADDQ   $512, SI
	DECQ   CX
	JNZ    loop
done:
	SWEEP_SUM
	MOVQ AX, ret+16(FP)
	RET

// func fmaLoop(iters int, x, y float32) float32
// 12 independent accumulators (enough to cover FMA latency × ports) each do
// acc += x*y per iteration; returns lane 0 of the first, iters*x*y.
TEXT ·fmaLoop(SB), NOSPLIT, $0-20
	MOVQ iters+0(FP), CX
	VBROADCASTSS x+8(FP), Z12
	VBROADCASTSS y+12(FP), Z13
	ACC12_LOOP(VFMADD231PS)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func vnniLoop(iters int, u, s uint32) int32
// 12 independent VPDPBUSD accumulators: acc += Σ₄ u8(u)·s8(s) per dword lane
// per iteration; returns lane 0 of the first.
TEXT ·vnniLoop(SB), NOSPLIT, $0-20
	MOVQ iters+0(FP), CX
	MOVL u+8(FP), AX
	VPBROADCASTD AX, Z12
	MOVL s+12(FP), AX
	VPBROADCASTD AX, Z13
	ACC12_LOOP(VPDPBUSD)
	VMOVD X0, AX
	MOVL AX, ret+16(FP)
	VZEROUPPER
	RET

// func amxInt8Loop(cfg *byte, a *int8, b *int8, c *int32, iters int)
// Tile-resident (AMX_LOOP): each iteration does 4 TDPBSSD.
TEXT ·amxInt8Loop(SB), NOSPLIT, $0-40
	AMX_LOOP(TDPBSSD)

// func amxBF16Loop(cfg *byte, a *uint16, b *uint16, c *float32, iters int)
// As amxInt8Loop with TDPBF16PS: bf16 A and B tiles, float32 accumulators.
TEXT ·amxBF16Loop(SB), NOSPLIT, $0-40
	AMX_LOOP(TDPBF16PS)

// func readSweepPf(p *byte, n, dist int) uint64
// readSweep with each 64-byte line prefetched (PREFETCHT0) dist bytes
// ahead: a core whose hardware prefetchers stop short of the bandwidth.
TEXT ·readSweepPf(SB), NOSPLIT, $0-32
	READ_SWEEP_PF(PREFETCHT0)
	MOVQ AX, ret+24(FP)
	RET

// func readSweepPf1(p *byte, n, dist int) uint64
// readSweepPf prefetching into L2 (PREFETCHT1): a core whose line fill
// buffers, which PREFETCHT0 and the loads share, limit its stream.
TEXT ·readSweepPf1(SB), NOSPLIT, $0-32
	READ_SWEEP_PF(PREFETCHT1)
	MOVQ AX, ret+24(FP)
	RET

// func readSweep2(p, q *byte, n int) uint64
// readSweep over two sequences at once (n bytes from each, a multiple of
// 256): a core's prefetchers follow each, so more lines are in flight.
TEXT ·readSweep2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $8, CX
	ZERO_Z0_Z3
	TESTQ CX, CX
	JZ    s2done
s2loop:
	VPADDQ 0(SI), Z0, Z0
	VPADDQ 0(DI), Z1, Z1
	VPADDQ 64(SI), Z2, Z2
	VPADDQ 64(DI), Z3, Z3
	VPADDQ 128(SI), Z0, Z0
	VPADDQ 128(DI), Z1, Z1
	VPADDQ 192(SI), Z2, Z2
	VPADDQ 192(DI), Z3, Z3
	ADDQ   $256, SI
	ADDQ   $256, DI
	DECQ   CX
	JNZ    s2loop
s2done:
	SWEEP_SUM
	MOVQ AX, ret+24(FP)
	RET
