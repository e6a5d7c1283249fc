//go:build !noasm

#include "textflag.h"

// Building blocks of decode attention for one query head: the scaled dot
// products of q with every cached key, and the probability-weighted sum of
// the cached values. Head vectors are walked 16 lanes at a time under a
// K-mask, so any head size works.

// K1 = the low min(max(cnt, 0), 16) bits; clobbers AX, CX.
#define MASK16(cnt) \
	MOVQ cnt, CX; \
	XORQ AX, AX; \
	TESTQ CX, CX; \
	CMOVQLT AX, CX; \
	MOVQ $16, AX; \
	CMPQ CX, AX; \
	CMOVQGT AX, CX; \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K1

// func attnScoresAVX512(p, q, k *float32, stride, headDim, n int, scale float32)
//
// p[t] = scale · q·k[t], k[t] at k + t·stride bytes.
TEXT ·attnScoresAVX512(SB), NOSPLIT, $0-52
	MOVQ p+0(FP), DI
	MOVQ k+16(FP), R10
	MOVQ stride+24(FP), R9
	MOVQ n+40(FP), R8
	VMOVSS scale+48(FP), X10
scoresPos:
	MOVQ q+8(FP), SI
	MOVQ R10, DX
	MOVQ headDim+32(FP), BX
	VPXORD Z8, Z8, Z8
scoresLane:
	MASK16(BX)
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	VFMADD231PS Z1, Z0, Z8
	ADDQ $64, SI
	ADDQ $64, DX
	SUBQ $16, BX
	JG scoresLane
	VEXTRACTF64X4 $1, Z8, Y9
	VADDPS Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VPSHUFD $0x4e, X8, X9
	VADDPS X9, X8, X8
	VPSHUFD $0xb1, X8, X9
	VADDSS X9, X8, X8
	VMULSS X10, X8, X8
	VMOVSS X8, (DI)
	ADDQ $4, DI
	ADDQ R9, R10
	DECQ R8
	JNZ scoresPos
	VZEROUPPER
	RET

// func attnWeightedSumAVX512(out, p, v *float32, stride, headDim, n int)
//
// out = Σ_t p[t]·v[t], v[t] at v + t·stride bytes. 64 output lanes per pass
// over the positions, in four accumulators under the masks K1-K4, so each
// position's values are read as one contiguous run (a head of 64 or 128
// floats takes one or two passes).
TEXT ·attnWeightedSumAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+16(FP), R10
	MOVQ stride+24(FP), R9
	MOVQ headDim+32(FP), BX
sumBlock:
	MASK16(BX)
	KMOVW K1, K5
	LEAQ -16(BX), R11
	MASK16(R11)
	KMOVW K1, K2
	LEAQ -32(BX), R11
	MASK16(R11)
	KMOVW K1, K3
	LEAQ -48(BX), R11
	MASK16(R11)
	KMOVW K1, K4
	KMOVW K5, K1
	MOVQ p+8(FP), SI
	MOVQ R10, DX
	MOVQ n+40(FP), R8
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
sumPos:
	VBROADCASTSS (SI), Z2
	VMOVUPS.Z (DX), K1, Z4
	VMOVUPS.Z 64(DX), K2, Z5
	VMOVUPS.Z 128(DX), K3, Z6
	VMOVUPS.Z 192(DX), K4, Z7
	VFMADD231PS Z2, Z4, Z8
	VFMADD231PS Z2, Z5, Z9
	VFMADD231PS Z2, Z6, Z10
	VFMADD231PS Z2, Z7, Z11
	ADDQ $4, SI
	ADDQ R9, DX
	DECQ R8
	JNZ sumPos
	VMOVUPS Z8, K1, (DI)
	VMOVUPS Z9, K2, 64(DI)
	VMOVUPS Z10, K3, 128(DI)
	VMOVUPS Z11, K4, 192(DI)
	ADDQ $256, DI
	ADDQ $256, R10
	SUBQ $64, BX
	JG sumBlock
	VZEROUPPER
	RET
