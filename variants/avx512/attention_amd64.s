//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// Building blocks of decode attention for one query head: the scaled dot
// products of q with every cached key, and the probability-weighted sum of
// the cached values. Head vectors are walked 16 lanes at a time under a
// K-mask, so any head size works.

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

// Reduce the 16 lanes of z to one float, times X10, stored at off(DI).
#define HSUM_SCALE_STORE(z, y, x, off) \
	VEXTRACTF64X4 $1, z, Y1; \
	VADDPS Y1, y, Y1; \
	VEXTRACTF128 $1, Y1, X2; \
	VADDPS X2, X1, X1; \
	VPSHUFD $0x4e, X1, X2; \
	VADDPS X2, X1, X1; \
	VPSHUFD $0xb1, X1, X2; \
	VADDSS X2, X1, X1; \
	VMULSS X10, X1, X1; \
	VMOVSS X1, off

// func attnScores4AVX512(p, q, k *float32, stride, headDim, n int, scale float32)
//
// Four query heads against one key head: p[j·n+t] = scale · q_j·k[t] for
// j < 4, q_j at q + j·headDim floats. Each key row is read once for the
// four heads.
TEXT ·attnScores4AVX512(SB), NOSPLIT, $0-52
	MOVQ p+0(FP), DI
	MOVQ k+16(FP), R10
	MOVQ stride+24(FP), R9
	MOVQ n+40(FP), R8
	VMOVSS scale+48(FP), X10
	MOVQ headDim+32(FP), R11
	SHLQ $2, R11 // a head in bytes
	MOVQ n+40(FP), R12
	SHLQ $2, R12 // a score row in bytes
g4Pos:
	MOVQ q+8(FP), SI
	LEAQ (SI)(R11*2), R13
	MOVQ R10, DX
	MOVQ headDim+32(FP), BX
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
g4Lane:
	MASK16(BX)
	VMOVUPS.Z (DX), K1, Z0
	VMOVUPS.Z (SI), K1, Z3
	VMOVUPS.Z (SI)(R11*1), K1, Z4
	VMOVUPS.Z (R13), K1, Z5
	VMOVUPS.Z (R13)(R11*1), K1, Z6
	VFMADD231PS Z0, Z3, Z8
	VFMADD231PS Z0, Z4, Z9
	VFMADD231PS Z0, Z5, Z11
	VFMADD231PS Z0, Z6, Z12
	ADDQ $64, SI
	ADDQ $64, R13
	ADDQ $64, DX
	SUBQ $16, BX
	JG g4Lane
	HSUM_SCALE_STORE(Z8, Y8, X8, (DI))
	HSUM_SCALE_STORE(Z9, Y9, X9, (DI)(R12*1))
	LEAQ (DI)(R12*2), AX
	HSUM_SCALE_STORE(Z11, Y11, X11, (AX))
	HSUM_SCALE_STORE(Z12, Y12, X12, (AX)(R12*1))
	ADDQ $4, DI
	ADDQ R9, R10
	DECQ R8
	JNZ g4Pos
	VZEROUPPER
	RET

// func attnWeightedSum4AVX512(out, p, v *float32, stride, headDim, n int)
//
// Four query heads' weighted sums over one value head: out_j = Σ_t
// p[j·n+t]·v[t], out_j at out + j·headDim floats. 64 output lanes of all
// four heads per pass (16 accumulators), each value row read once.
TEXT ·attnWeightedSum4AVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+16(FP), R10
	MOVQ stride+24(FP), R9
	MOVQ headDim+32(FP), BX
	MOVQ BX, R11
	SHLQ $2, R11 // a head in bytes
	MOVQ n+40(FP), R12
	SHLQ $2, R12 // a score row in bytes
w4Block:
	MASK16(BX)
	KMOVW K1, K5
	LEAQ -16(BX), R13
	MASK16(R13)
	KMOVW K1, K2
	LEAQ -32(BX), R13
	MASK16(R13)
	KMOVW K1, K3
	LEAQ -48(BX), R13
	MASK16(R13)
	KMOVW K1, K4
	KMOVW K5, K1
	MOVQ p+8(FP), SI
	LEAQ (SI)(R12*2), R13
	MOVQ R10, DX
	MOVQ n+40(FP), R8
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
w4Pos:
	VMOVUPS.Z (DX), K1, Z4
	VMOVUPS.Z 64(DX), K2, Z5
	VMOVUPS.Z 128(DX), K3, Z6
	VMOVUPS.Z 192(DX), K4, Z7
	VBROADCASTSS (SI), Z0
	VBROADCASTSS (SI)(R12*1), Z1
	VBROADCASTSS (R13), Z2
	VBROADCASTSS (R13)(R12*1), Z3
	VFMADD231PS Z0, Z4, Z8
	VFMADD231PS Z0, Z5, Z9
	VFMADD231PS Z0, Z6, Z10
	VFMADD231PS Z0, Z7, Z11
	VFMADD231PS Z1, Z4, Z12
	VFMADD231PS Z1, Z5, Z13
	VFMADD231PS Z1, Z6, Z14
	VFMADD231PS Z1, Z7, Z15
	VFMADD231PS Z2, Z4, Z16
	VFMADD231PS Z2, Z5, Z17
	VFMADD231PS Z2, Z6, Z18
	VFMADD231PS Z2, Z7, Z19
	VFMADD231PS Z3, Z4, Z20
	VFMADD231PS Z3, Z5, Z21
	VFMADD231PS Z3, Z6, Z22
	VFMADD231PS Z3, Z7, Z23
	ADDQ $4, SI
	ADDQ $4, R13
	ADDQ R9, DX
	DECQ R8
	JNZ w4Pos
	MOVQ DI, AX
	VMOVUPS Z8, K1, (AX)
	VMOVUPS Z9, K2, 64(AX)
	VMOVUPS Z10, K3, 128(AX)
	VMOVUPS Z11, K4, 192(AX)
	ADDQ R11, AX
	VMOVUPS Z12, K1, (AX)
	VMOVUPS Z13, K2, 64(AX)
	VMOVUPS Z14, K3, 128(AX)
	VMOVUPS Z15, K4, 192(AX)
	ADDQ R11, AX
	VMOVUPS Z16, K1, (AX)
	VMOVUPS Z17, K2, 64(AX)
	VMOVUPS Z18, K3, 128(AX)
	VMOVUPS Z19, K4, 192(AX)
	ADDQ R11, AX
	VMOVUPS Z20, K1, (AX)
	VMOVUPS Z21, K2, 64(AX)
	VMOVUPS Z22, K3, 128(AX)
	VMOVUPS Z23, K4, 192(AX)
	ADDQ $256, DI
	ADDQ $256, R10
	SUBQ $64, BX
	JG w4Block
	VZEROUPPER
	RET

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



// FOLD_HALVES adds the high 256 bits of a position's accumulator pair into
// the low ones: lo = [lo.low, hi.low] + [lo.high, hi.high] in 256-bit
// halves; clobbers Z9.
#define FOLD_HALVES(lo, hi, yhi) \
	VSHUFF64X2 $0xee, hi, lo, Z9; \
	VINSERTF64X4 $1, yhi, lo, lo; \
	VADDPS Z9, lo, lo

// func attnScores4x4AVX512(p, q, k *float32, stride, headDim, n, ldp int, scale float32)
//
// Four query heads against one key head, four positions per pass:
// p[j·ldp+t] = scale · q_j·k[t] for j < 4 and t < n&^3 (the caller does
// the rest), q_j at q + j·headDim floats, k[t] at k + t·stride bytes;
// headDim a multiple of 16. The 16 (position, head) dot products of a pass
// accumulate in Z16-Z31 (Z16+4t+j) and are reduced by a transposing add
// tree to one vector whose 128-bit lane j holds head j's four scores.
TEXT ·attnScores4x4AVX512(SB), NOSPLIT, $0-60
	MOVQ p+0(FP), DI
	MOVQ k+16(FP), R10
	MOVQ stride+24(FP), R9
	MOVQ n+40(FP), R8
	SHRQ $2, R8
	JZ t4Done
	VBROADCASTSS scale+56(FP), Z8
	MOVQ headDim+32(FP), R11
	SHLQ $2, R11 // a head in bytes
	MOVQ ldp+48(FP), R12
	SHLQ $2, R12 // a score row in bytes
	LEAQ (R9)(R9*2), R14 // three rows
t4Pass:
	MOVQ q+8(FP), SI
	LEAQ (SI)(R11*2), R13
	MOVQ R10, DX
	MOVQ headDim+32(FP), BX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
t4Lane:
	VMOVUPS (DX), Z0
	VMOVUPS (DX)(R9*1), Z1
	VMOVUPS (DX)(R9*2), Z2
	VMOVUPS (DX)(R14*1), Z3
	VMOVUPS (SI), Z4
	VMOVUPS (SI)(R11*1), Z5
	VMOVUPS (R13), Z6
	VMOVUPS (R13)(R11*1), Z7
	VFMADD231PS Z0, Z4, Z16
	VFMADD231PS Z0, Z5, Z17
	VFMADD231PS Z0, Z6, Z18
	VFMADD231PS Z0, Z7, Z19
	VFMADD231PS Z1, Z4, Z20
	VFMADD231PS Z1, Z5, Z21
	VFMADD231PS Z1, Z6, Z22
	VFMADD231PS Z1, Z7, Z23
	VFMADD231PS Z2, Z4, Z24
	VFMADD231PS Z2, Z5, Z25
	VFMADD231PS Z2, Z6, Z26
	VFMADD231PS Z2, Z7, Z27
	VFMADD231PS Z3, Z4, Z28
	VFMADD231PS Z3, Z5, Z29
	VFMADD231PS Z3, Z6, Z30
	VFMADD231PS Z3, Z7, Z31
	ADDQ $64, SI
	ADDQ $64, R13
	ADDQ $64, DX
	SUBQ $16, BX
	JG t4Lane

	// 16 → 8: (head j, head j+1) pairs of one position.
	FOLD_HALVES(Z16, Z17, Y17)
	FOLD_HALVES(Z18, Z19, Y19)
	FOLD_HALVES(Z20, Z21, Y21)
	FOLD_HALVES(Z22, Z23, Y23)
	FOLD_HALVES(Z24, Z25, Y25)
	FOLD_HALVES(Z26, Z27, Y27)
	FOLD_HALVES(Z28, Z29, Y29)
	FOLD_HALVES(Z30, Z31, Y31)
	// 8 → 4: one position's four heads, four partials each per 128-bit lane.
	VSHUFF64X2 $0x88, Z18, Z16, Z9
	VSHUFF64X2 $0xdd, Z18, Z16, Z10
	VADDPS Z10, Z9, Z16
	VSHUFF64X2 $0x88, Z22, Z20, Z9
	VSHUFF64X2 $0xdd, Z22, Z20, Z10
	VADDPS Z10, Z9, Z20
	VSHUFF64X2 $0x88, Z26, Z24, Z9
	VSHUFF64X2 $0xdd, Z26, Z24, Z10
	VADDPS Z10, Z9, Z24
	VSHUFF64X2 $0x88, Z30, Z28, Z9
	VSHUFF64X2 $0xdd, Z30, Z28, Z10
	VADDPS Z10, Z9, Z28
	// 4 → 2: positions (0, 1) and (2, 3), two partials each.
	VSHUFPS $0x88, Z20, Z16, Z9
	VSHUFPS $0xdd, Z20, Z16, Z10
	VADDPS Z10, Z9, Z16
	VSHUFPS $0x88, Z28, Z24, Z9
	VSHUFPS $0xdd, Z28, Z24, Z10
	VADDPS Z10, Z9, Z24
	// 2 → 1: lane j = head j at positions 0-3.
	VSHUFPS $0x88, Z24, Z16, Z9
	VSHUFPS $0xdd, Z24, Z16, Z10
	VADDPS Z10, Z9, Z16
	VMULPS Z8, Z16, Z16
	VMOVUPS X16, (DI)
	VEXTRACTF32X4 $1, Z16, (DI)(R12*1)
	LEAQ (DI)(R12*2), AX
	VEXTRACTF32X4 $2, Z16, (AX)
	VEXTRACTF32X4 $3, Z16, (AX)(R12*1)
	ADDQ $16, DI
	LEAQ (R10)(R9*4), R10
	DECQ R8
	JNZ t4Pass
t4Done:
	VZEROUPPER
	RET
