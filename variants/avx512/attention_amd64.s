//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"
#include "gqa_amd64.h"

// Building blocks of decode attention for one query head: the scaled dot
// products of q with every cached key, and the probability-weighted sum of
// the cached values. Head vectors are walked 16 lanes at a time under a
// K-mask, so any head size works.

// func attnScoresAVX512(p, q, k *float32, stride, headDim, n int, scale float32)
//
// p[t] = scale · q·k[t], k[t] at k + t·stride bytes.
TEXT ·attnScoresAVX512(SB), NOSPLIT, $0-52
	SCORES_ARGS
	VMOVSS scale+48(FP), X10
scoresPos:
	POS_START(q)
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
	WSUM_ARGS
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

// func attnScores4AVX512(p, q, k *float32, stride, headDim, n int, scale float32)
//
// Four query heads against one key head: p[j·n+t] = scale · q_j·k[t] for
// j < 4, q_j at q + j·headDim floats. Each key row is read once for the
// four heads.
TEXT ·attnScores4AVX512(SB), NOSPLIT, $0-52
	SCORES4(LOAD_F32, 64, g4Pos, g4Lane)

// func attnWeightedSum4AVX512(out, p, v *float32, stride, headDim, n int)
//
// Four query heads' weighted sums over one value head: out_j = Σ_t
// p[j·n+t]·v[t], out_j at out + j·headDim floats. 64 output lanes of all
// four heads per pass (16 accumulators), each value row read once.
TEXT ·attnWeightedSum4AVX512(SB), NOSPLIT, $0-48
	WSUM4(LOAD_F32, 64, 128, 192, 256, w4Block, w4Pos)

// func prefetchLines(p *byte, n int)
//
// PREFETCHT0 every cache line of p[0:n], back to back, so that the misses
// of a short stream overlap instead of waiting on the hardware prefetcher.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX
	ANDQ $-64, SI
pfLine:
	CMPQ SI, CX
	JAE pfDone
	PREFETCHT0 (SI)
	ADDQ $64, SI
	JMP pfLine
pfDone:
	RET



// func attnScores4x4AVX512(p, q, k *float32, stride, headDim, n, ldp int, scale float32)
//
// Four query heads against one key head, four positions per pass:
// p[j·ldp+t] = scale · q_j·k[t] for j < 4 and t < n&^3 (the caller does
// the rest), q_j at q + j·headDim floats, k[t] at k + t·stride bytes;
// headDim a multiple of 16. The 16 (position, head) dot products of a pass
// accumulate in Z16-Z31 (Z16+4t+j) and are reduced by a transposing add
// tree to one vector whose 128-bit lane j holds head j's four scores.
TEXT ·attnScores4x4AVX512(SB), NOSPLIT, $0-60
	SCORES4X4(LOAD4_F32, 64, t4Pass, t4Lane, t4Done)

// func attnWeightedSum3WAVX512(out, p, v *float32, stride, headDim, n int)
//
// Three query heads' weighted sums over one value head, walking the
// positions once per 128 values of the head (WSUM3W); headDim a multiple
// of 128. The bits of attnWeightedSum4AVX512's first three heads.
TEXT ·attnWeightedSum3WAVX512(SB), NOSPLIT, $0-48
	WSUM3W(LOAD4_F32, 64, 128, 192, 256, 320, 384, 448, 512, W3PF_NONE, 0, w3Block, w3Pos)
