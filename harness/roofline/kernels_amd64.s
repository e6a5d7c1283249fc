//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"

// func readSweep(p *byte, n int) uint64
// Reads n bytes (a multiple of 512) with AVX-512 loads and returns the sum of
// all uint64 words, so the tests can check every byte was read.
TEXT ·readSweep(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $9, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
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
	VPADDQ Z1, Z0, Z0
	VPADDQ Z3, Z2, Z2
	VPADDQ Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

// func fmaLoop(iters int, x, y float32) float32
// 12 independent accumulators (enough to cover FMA latency × ports) each do
// acc += x*y per iteration; returns lane 0 of the first, iters*x*y.
TEXT ·fmaLoop(SB), NOSPLIT, $0-20
	MOVQ iters+0(FP), CX
	VBROADCASTSS x+8(FP), Z12
	VBROADCASTSS y+12(FP), Z13
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	TESTQ CX, CX
	JZ    fmadone
fmaloop:
	VFMADD231PS Z13, Z12, Z0
	VFMADD231PS Z13, Z12, Z1
	VFMADD231PS Z13, Z12, Z2
	VFMADD231PS Z13, Z12, Z3
	VFMADD231PS Z13, Z12, Z4
	VFMADD231PS Z13, Z12, Z5
	VFMADD231PS Z13, Z12, Z6
	VFMADD231PS Z13, Z12, Z7
	VFMADD231PS Z13, Z12, Z8
	VFMADD231PS Z13, Z12, Z9
	VFMADD231PS Z13, Z12, Z10
	VFMADD231PS Z13, Z12, Z11
	DECQ CX
	JNZ  fmaloop
fmadone:
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
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	TESTQ CX, CX
	JZ    vnnidone
vnniloop:
	VPDPBUSD Z13, Z12, Z0
	VPDPBUSD Z13, Z12, Z1
	VPDPBUSD Z13, Z12, Z2
	VPDPBUSD Z13, Z12, Z3
	VPDPBUSD Z13, Z12, Z4
	VPDPBUSD Z13, Z12, Z5
	VPDPBUSD Z13, Z12, Z6
	VPDPBUSD Z13, Z12, Z7
	VPDPBUSD Z13, Z12, Z8
	VPDPBUSD Z13, Z12, Z9
	VPDPBUSD Z13, Z12, Z10
	VPDPBUSD Z13, Z12, Z11
	DECQ CX
	JNZ  vnniloop
vnnidone:
	VMOVD X0, AX
	MOVL AX, ret+16(FP)
	VZEROUPPER
	RET

// func amxInt8Loop(cfg *byte, a *int8, b *int8, c *int32, iters int)
// Tile-resident: A tiles tmm4, tmm5 (a, a+1024), B tiles tmm6, tmm7 (b, b+1024),
// accumulators tmm0..tmm3 start at zero; each iteration does 4 TDPBSSD
// (C[i][j] += A[i]·B[j]); the accumulators are stored to c (4 tiles × 1 KiB).
TEXT ·amxInt8Loop(SB), NOSPLIT, $0-40
	MOVQ cfg+0(FP), AX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ iters+32(FP), R8
	MOVQ $64, CX
	LDTILECFG(AMX_AX)
	TILELOADD(4, AMX_SI, AMX_CX)
	ADDQ $1024, SI
	TILELOADD(5, AMX_SI, AMX_CX)
	TILELOADD(6, AMX_DI, AMX_CX)
	ADDQ $1024, DI
	TILELOADD(7, AMX_DI, AMX_CX)
	TILEZERO(0)
	TILEZERO(1)
	TILEZERO(2)
	TILEZERO(3)
	TESTQ R8, R8
	JZ    i8store
i8loop:
	TDPBSSD(0, 4, 6)
	TDPBSSD(1, 4, 7)
	TDPBSSD(2, 5, 6)
	TDPBSSD(3, 5, 7)
	DECQ R8
	JNZ  i8loop
i8store:
	TILESTORED(0, AMX_DX, AMX_CX)
	ADDQ $1024, DX
	TILESTORED(1, AMX_DX, AMX_CX)
	ADDQ $1024, DX
	TILESTORED(2, AMX_DX, AMX_CX)
	ADDQ $1024, DX
	TILESTORED(3, AMX_DX, AMX_CX)
	TILERELEASE
	RET

// func amxBF16Loop(cfg *byte, a *uint16, b *uint16, c *float32, iters int)
// As amxInt8Loop with TDPBF16PS: bf16 A and B tiles, float32 accumulators.
TEXT ·amxBF16Loop(SB), NOSPLIT, $0-40
	MOVQ cfg+0(FP), AX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ iters+32(FP), R8
	MOVQ $64, CX
	LDTILECFG(AMX_AX)
	TILELOADD(4, AMX_SI, AMX_CX)
	ADDQ $1024, SI
	TILELOADD(5, AMX_SI, AMX_CX)
	TILELOADD(6, AMX_DI, AMX_CX)
	ADDQ $1024, DI
	TILELOADD(7, AMX_DI, AMX_CX)
	TILEZERO(0)
	TILEZERO(1)
	TILEZERO(2)
	TILEZERO(3)
	TESTQ R8, R8
	JZ    bfstore
bfloop:
	TDPBF16PS(0, 4, 6)
	TDPBF16PS(1, 4, 7)
	TDPBF16PS(2, 5, 6)
	TDPBF16PS(3, 5, 7)
	DECQ R8
	JNZ  bfloop
bfstore:
	TILESTORED(0, AMX_DX, AMX_CX)
	ADDQ $1024, DX
	TILESTORED(1, AMX_DX, AMX_CX)
	ADDQ $1024, DX
	TILESTORED(2, AMX_DX, AMX_CX)
	ADDQ $1024, DX
	TILESTORED(3, AMX_DX, AMX_CX)
	TILERELEASE
	RET
