//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"
#include "gqa_amd64.h"

// Building blocks of prefill (batched, causal) attention for one key/value
// head: sixteen query rows at a time, one row per lane. Scores and
// probabilities are kept position-major, s[t·16 + l] for row l, so every
// step is a vector over the sixteen rows and each cached key and value row
// is read once per sixteen query rows. exp is exp_amd64.h's.

#include "exp_amd64.h"

// Eight positions' partial scores: a0..a7 += zq · k[t+u][i], the key
// element broadcast from off bytes into rows t (DX), t+3 (R13) and t+6
// (R14), R9 bytes apart.
#define FMA8(zq, off, a0, a1, a2, a3, a4, a5, a6, a7) \
	VFMADD231PS.BCST off(DX), zq, a0; \
	VFMADD231PS.BCST off(DX)(R9*1), zq, a1; \
	VFMADD231PS.BCST off(DX)(R9*2), zq, a2; \
	VFMADD231PS.BCST off(R13), zq, a3; \
	VFMADD231PS.BCST off(R13)(R9*1), zq, a4; \
	VFMADD231PS.BCST off(R13)(R9*2), zq, a5; \
	VFMADD231PS.BCST off(R14), zq, a6; \
	VFMADD231PS.BCST off(R14)(R9*1), zq, a7

// WS_ARGS loads the weighted sums' arguments: DI o, R10 v, R9 stride,
// BX headDim, R12 inv, R11 an output row in bytes.
#define WS_ARGS \
	MOVQ o+0(FP), DI; \
	MOVQ v+16(FP), R10; \
	MOVQ stride+24(FP), R9; \
	MOVQ headDim+32(FP), BX; \
	MOVQ inv+48(FP), R12; \
	MOVQ BX, R11; \
	SHLQ $2, R11

// SC_BACK_UP moves a last group of g positions back to end at n (R8 < g
// positions left): the keys (R10, rows R9 bytes apart) and the scores (DI,
// 64 bytes a position) step back g - R8 positions, recomputing a few. pos
// and kb are scratch; pos is left holding the scores' step back in bytes,
// for a second score pointer. R8 becomes g.
#define SC_BACK_UP(g, pos, kb) \
	MOVQ $g, pos; \
	SUBQ R8, pos; \
	MOVQ pos, kb; \
	IMULQ R9, kb; \
	SUBQ kb, R10; \
	SHLQ $6, pos; \
	SUBQ pos, DI; \
	MOVQ $g, R8

// ADD_ODD8 adds the odd elements' partial scores (Z16-Z23) into the even
// elements' (Z8-Z15).
#define ADD_ODD8 \
	VADDPS Z16, Z8, Z8; \
	VADDPS Z17, Z9, Z9; \
	VADDPS Z18, Z10, Z10; \
	VADDPS Z19, Z11, Z11; \
	VADDPS Z20, Z12, Z12; \
	VADDPS Z21, Z13, Z13; \
	VADDPS Z22, Z14, Z14; \
	VADDPS Z23, Z15, Z15

// func attnbScores16(s, qt, k *float32, stride, headDim, n int)
//
// s[t·16+l] = Σ_i qt[i·16+l]·k[t][i] for t < n, k[t] at k + t·stride
// bytes: qt holds the sixteen (scaled) query rows transposed, element i of
// every row in one vector, so a position's sixteen scores are headDim
// FMAs with the key element broadcast from memory. Eight positions share
// each qt load; the even and odd elements go to separate accumulators.
// When n is not a multiple of 8, the last group of eight is moved back to
// end at n (recomputing a few positions); n < 8 takes one position at a
// time.
TEXT ·attnbScores16(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), DI
	MOVQ k+16(FP), R10
	MOVQ stride+24(FP), R9
	MOVQ n+40(FP), R8
	LEAQ (R9)(R9*2), R12 // three rows in bytes
	CMPQ R8, $8
	JLT sc1Pos

sc8Group:
	CMPQ R8, $8
	JGE sc8Body
	SC_BACK_UP(8, CX, AX)

sc8Body:
	MOVQ qt+8(FP), SI
	MOVQ R10, DX
	LEAQ (R10)(R12*1), R13
	LEAQ (R13)(R12*1), R14
	MOVQ headDim+32(FP), BX
	ZERO16

sc8Quad:
	CMPQ BX, $4
	JLT sc8Single
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	FMA8(Z0, 0, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	FMA8(Z1, 4, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	FMA8(Z2, 8, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	FMA8(Z3, 12, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	ADDQ $256, SI
	ADDQ $16, DX
	ADDQ $16, R13
	ADDQ $16, R14
	SUBQ $4, BX
	JMP sc8Quad

sc8Single:
	TESTQ BX, BX
	JZ sc8Store
	VMOVUPS (SI), Z0
	FMA8(Z0, 0, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ADDQ $64, SI
	ADDQ $4, DX
	ADDQ $4, R13
	ADDQ $4, R14
	DECQ BX
	JMP sc8Single

sc8Store:
	ADD_ODD8
	VMOVUPS Z8, (DI)
	VMOVUPS Z9, 64(DI)
	VMOVUPS Z10, 128(DI)
	VMOVUPS Z11, 192(DI)
	VMOVUPS Z12, 256(DI)
	VMOVUPS Z13, 320(DI)
	VMOVUPS Z14, 384(DI)
	VMOVUPS Z15, 448(DI)
	LEAQ (R10)(R9*8), R10
	ADDQ $512, DI
	SUBQ $8, R8
	JG sc8Group
	VZEROUPPER
	RET

sc1Pos:
	POS_START(qt)

sc1Lane:
	VMOVUPS (SI), Z0
	VFMADD231PS.BCST (DX), Z0, Z8
	ADDQ $64, SI
	ADDQ $4, DX
	DECQ BX
	JNZ sc1Lane
	VMOVUPS Z8, (DI)
	ADDQ $64, DI
	ADDQ R9, R10
	DECQ R8
	JNZ sc1Pos
	VZEROUPPER
	RET

// Four positions' partial scores for both row blocks: the key element
// (off bytes into rows t (DX), t+1, t+2 (R9 apart) and t+3 (R13))
// broadcast once into Z24-Z27 and multiplied by element i of block 0 (q0)
// and of block 1 (q1); a0-a7 are (position, block) in that order.
#define S32_ELEM(off, q0, q1, a0, a1, a2, a3, a4, a5, a6, a7) \
	VBROADCASTSS off(DX), Z24; \
	VBROADCASTSS off(DX)(R9*1), Z25; \
	VBROADCASTSS off(DX)(R9*2), Z26; \
	VBROADCASTSS off(R13), Z27; \
	VFMADD231PS Z24, q0, a0; \
	VFMADD231PS Z24, q1, a1; \
	VFMADD231PS Z25, q0, a2; \
	VFMADD231PS Z25, q1, a3; \
	VFMADD231PS Z26, q0, a4; \
	VFMADD231PS Z26, q1, a5; \
	VFMADD231PS Z27, q0, a6; \
	VFMADD231PS Z27, q1, a7

// func attnbScores32(s0, s1, qt0, qt1, k *float32, stride, headDim, n int)
//
// attnbScores16 for two blocks of sixteen query rows at once (qt0 → s0,
// qt1 → s1) over the same keys: each key element is broadcast once for
// both blocks, so four positions × two blocks cost two query loads and
// four broadcasts per eight FMAs (attnbScores16: one and eight), and each
// key row is read once per 32 rows. Every score is attnbScores16's
// eight-position chain (even and odd elements apart, the head's last
// headDim mod 4 elements with the even ones, then added): bit for bit
// attnbScores16's scores for n ≥ 8. n ≥ 4; a last group short of four
// is moved back to end at n.
TEXT ·attnbScores32(SB), NOSPLIT, $0-64
	MOVQ s0+0(FP), DI
	MOVQ s1+8(FP), R11
	MOVQ qt1+24(FP), AX
	SUBQ qt0+16(FP), AX // block 1's query vectors, from block 0's
	MOVQ k+32(FP), R10
	MOVQ stride+40(FP), R9
	MOVQ n+56(FP), R8
	LEAQ (R9)(R9*2), R12 // three rows in bytes

s32Group:
	CMPQ R8, $4
	JGE s32Body
	SC_BACK_UP(4, CX, BX)
	SUBQ CX, R11

s32Body:
	MOVQ qt0+16(FP), SI
	MOVQ R10, DX
	LEAQ (R10)(R12*1), R13
	MOVQ headDim+48(FP), BX
	ZERO16

s32Quad:
	CMPQ BX, $4
	JLT s32Single
	VMOVUPS (SI), Z0
	VMOVUPS (SI)(AX*1), Z1
	VMOVUPS 64(SI), Z2
	VMOVUPS 64(SI)(AX*1), Z3
	VMOVUPS 128(SI), Z4
	VMOVUPS 128(SI)(AX*1), Z5
	VMOVUPS 192(SI), Z6
	VMOVUPS 192(SI)(AX*1), Z7
	S32_ELEM(0, Z0, Z1, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	S32_ELEM(4, Z2, Z3, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	S32_ELEM(8, Z4, Z5, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	S32_ELEM(12, Z6, Z7, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	ADDQ $256, SI
	ADDQ $16, DX
	ADDQ $16, R13
	SUBQ $4, BX
	JMP s32Quad

s32Single:
	TESTQ BX, BX
	JZ s32Store
	VMOVUPS (SI), Z0
	VMOVUPS (SI)(AX*1), Z1
	S32_ELEM(0, Z0, Z1, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ADDQ $64, SI
	ADDQ $4, DX
	ADDQ $4, R13
	DECQ BX
	JMP s32Single

s32Store:
	ADD_ODD8
	VMOVUPS Z8, (DI)
	VMOVUPS Z10, 64(DI)
	VMOVUPS Z12, 128(DI)
	VMOVUPS Z14, 192(DI)
	VMOVUPS Z9, (R11)
	VMOVUPS Z11, 64(R11)
	VMOVUPS Z13, 128(R11)
	VMOVUPS Z15, 192(R11)
	LEAQ (R10)(R9*4), R10
	ADDQ $256, DI
	ADDQ $256, R11
	SUBQ $4, R8
	JG s32Group
	VZEROUPPER
	RET

// func attnbSoftmax16(s *float32, n int, inv *float32)
//
// Per lane (row) over the n position vectors of s: subtract the row's
// maximum, exponentiate in place, and store 1/Σ (summed in float64) in
// inv[l]. n ≥ 1; masked positions hold -Inf and come out as 0 or a
// denormal that the caller clears.
TEXT ·attnbSoftmax16(SB), NOSPLIT, $0-24
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), BX
	BCAST32(0xff800000, Z9) // -Inf

smMax:
	VMAXPS (SI), Z9, Z9
	ADDQ $64, SI
	DECQ BX
	JNZ smMax
	EXP_CONSTS
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), BX

smExp:
	VMOVUPS (SI), Z0
	VSUBPS Z9, Z0, Z0
	EXP
	VMOVUPS Z0, (SI)
	VCVTPS2PD Y0, Z1
	VEXTRACTF64X4 $1, Z0, Y2
	VCVTPS2PD Y2, Z2
	VADDPD Z1, Z10, Z10
	VADDPD Z2, Z11, Z11
	ADDQ $64, SI
	DECQ BX
	JNZ smExp
	MOVQ $0x3ff0000000000000, AX // 1.0
	VPBROADCASTQ AX, Z12
	VDIVPD Z10, Z12, Z10
	VDIVPD Z11, Z12, Z11
	VCVTPD2PS Z10, Y10
	VCVTPD2PS Z11, Y11
	VINSERTF64X4 $1, Y11, Z10, Z10
	MOVQ inv+16(FP), DI
	VMOVUPS Z10, (DI)
	VZEROUPPER
	RET

// func attnbScale16(s *float32, n int, scale float32)
//
// s[i] *= scale over the n position vectors of s (n ≥ 1).
TEXT ·attnbScale16(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), BX
	VBROADCASTSS scale+16(FP), Z1

scl:
	VMULPS (SI), Z1, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	DECQ BX
	JNZ scl
	VZEROUPPER
	RET

// func attnbRoundP16(s *float32, n int, inv *float32)
//
// s[t·16+l] = bf16(s[t·16+l]·inv[l]) as float32, rounded to nearest even
// by integer arithmetic on the bits (finite, non-negative values: the
// probabilities), over the n position vectors of s (n ≥ 1).
TEXT ·attnbRoundP16(SB), NOSPLIT, $0-24
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), BX
	MOVQ inv+16(FP), DI
	VMOVUPS (DI), Z1
	BCAST32(0x7fff, Z2)
	BCAST32(1, Z3)
	BCAST32(0xffff0000, Z4)

rnd:
	VMULPS (SI), Z1, Z0
	VPSRLD $16, Z0, Z5
	VPANDD Z3, Z5, Z5
	VPADDD Z2, Z0, Z0
	VPADDD Z5, Z0, Z0
	VPANDD Z4, Z0, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	DECQ BX
	JNZ rnd
	VZEROUPPER
	RET

// func attnbRoundP16F16(s *float32, n int, inv *float32)
//
// attnbRoundP16 rounding to IEEE half (VCVTPS2PH, to nearest even).
TEXT ·attnbRoundP16F16(SB), NOSPLIT, $0-24
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), BX
	MOVQ inv+16(FP), DI
	VMOVUPS (DI), Z1

rndh:
	VMULPS (SI), Z1, Z0
	VCVTPS2PH $0, Z0, Y2
	VCVTPH2PS Y2, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	DECQ BX
	JNZ rndh
	VZEROUPPER
	RET

// Scale a row's accumulator by its 1/Σ (off bytes into inv, R12) and
// store its 16 (K1-masked) output lanes at AX, then step AX to the next
// output row (R11 bytes).
#define STORE_ROW(z, off) \
	VMULPS.BCST off(R12), z, z; \
	VMOVUPS z, K1, (AX); \
	ADDQ R11, AX

// func attnbWeightedSum16(o, p, v *float32, stride, headDim, n int, inv *float32)
//
// o[l·headDim + c] = inv[l] · Σ_t p[t·16+l]·v[t][c] for t < n, v[t] at v +
// t·stride bytes: sixteen output columns of all sixteen rows per pass over
// the positions (sixteen accumulators), each value row's columns loaded
// once and multiplied by the sixteen probabilities broadcast from memory.
TEXT ·attnbWeightedSum16(SB), NOSPLIT, $0-56
	WS_ARGS

wsChunk:
	MASK16(BX)
	ZERO16
	MOVQ p+8(FP), SI
	MOVQ R10, DX
	MOVQ n+40(FP), R8

wsPos:
	VMOVUPS.Z (DX), K1, Z0
	VFMADD231PS.BCST (SI), Z0, Z8
	VFMADD231PS.BCST 4(SI), Z0, Z9
	VFMADD231PS.BCST 8(SI), Z0, Z10
	VFMADD231PS.BCST 12(SI), Z0, Z11
	VFMADD231PS.BCST 16(SI), Z0, Z12
	VFMADD231PS.BCST 20(SI), Z0, Z13
	VFMADD231PS.BCST 24(SI), Z0, Z14
	VFMADD231PS.BCST 28(SI), Z0, Z15
	VFMADD231PS.BCST 32(SI), Z0, Z16
	VFMADD231PS.BCST 36(SI), Z0, Z17
	VFMADD231PS.BCST 40(SI), Z0, Z18
	VFMADD231PS.BCST 44(SI), Z0, Z19
	VFMADD231PS.BCST 48(SI), Z0, Z20
	VFMADD231PS.BCST 52(SI), Z0, Z21
	VFMADD231PS.BCST 56(SI), Z0, Z22
	VFMADD231PS.BCST 60(SI), Z0, Z23
	ADDQ $64, SI
	ADDQ R9, DX
	DECQ R8
	JNZ wsPos
	MOVQ DI, AX
	STORE_ROW(Z8, 0)
	STORE_ROW(Z9, 4)
	STORE_ROW(Z10, 8)
	STORE_ROW(Z11, 12)
	STORE_ROW(Z12, 16)
	STORE_ROW(Z13, 20)
	STORE_ROW(Z14, 24)
	STORE_ROW(Z15, 28)
	STORE_ROW(Z16, 32)
	STORE_ROW(Z17, 36)
	STORE_ROW(Z18, 40)
	STORE_ROW(Z19, 44)
	STORE_ROW(Z20, 48)
	STORE_ROW(Z21, 52)
	STORE_ROW(Z22, 56)
	STORE_ROW(Z23, 60)
	ADDQ $64, DI
	ADDQ $64, R10
	SUBQ $16, BX
	JG wsChunk
	VZEROUPPER
	RET

// Two columns' worth of one row's output: scale both accumulators by the
// row's 1/Σ (off bytes into inv at R12, plus the half's CX) and store them
// at AX and AX+64, then step AX to the next output row (R11 bytes).
#define STORE_ROW2(off, za, zb) \
	VMULPS.BCST off(R12)(CX*1), za, za; \
	VMULPS.BCST off(R12)(CX*1), zb, zb; \
	VMOVUPS za, (AX); \
	VMOVUPS zb, 64(AX); \
	ADDQ R11, AX

// Eight rows' products with one position's 32 columns (Z0, Z1): row r's
// probability broadcast once (off bytes into p at SI) for both halves.
#define WS_ROW(off, za, zb) \
	VBROADCASTSS off(SI), Z2; \
	VFMADD231PS Z2, Z0, za; \
	VFMADD231PS Z2, Z1, zb

// EIGHT_ROWS applies m(off, za, zb) to each of the eight rows of a pass:
// row r's float32 at 4r bytes (into p or inv) and its two accumulators.
#define EIGHT_ROWS(m) \
	m(0, Z8, Z9); \
	m(4, Z10, Z11); \
	m(8, Z12, Z13); \
	m(12, Z14, Z15); \
	m(16, Z16, Z17); \
	m(20, Z18, Z19); \
	m(24, Z20, Z21); \
	m(28, Z22, Z23)

// func attnbWeightedSum8x2(o, p, v *float32, stride, headDim, n int, inv *float32)
//
// attnbWeightedSum16 with the register tile the other way: eight rows ×
// thirty-two columns per pass over the positions (sixteen accumulators),
// so a position costs two value loads and eight probability broadcasts for
// sixteen FMAs instead of one load and sixteen broadcasts. Each output is
// the same FMAs in the same order: bit for bit attnbWeightedSum16's.
// headDim must be a multiple of 32.
TEXT ·attnbWeightedSum8x2(SB), NOSPLIT, $0-56
	WS_ARGS

ws2Cols:
	XORQ CX, CX // the half of the rows, as a byte offset into p's rows: 0 or 32

ws2Half:
	ZERO16
	MOVQ p+8(FP), SI
	ADDQ CX, SI
	MOVQ R10, DX
	MOVQ n+40(FP), R8

ws2Pos:
	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	EIGHT_ROWS(WS_ROW)
	ADDQ $64, SI
	ADDQ R9, DX
	DECQ R8
	JNZ ws2Pos
	MOVQ CX, AX
	SHRQ $2, AX
	IMULQ R11, AX
	ADDQ DI, AX // row 8·half's output, these columns
	EIGHT_ROWS(STORE_ROW2)
	ADDQ $32, CX
	CMPQ CX, $64
	JLT ws2Half
	ADDQ $128, DI
	ADDQ $128, R10
	SUBQ $32, BX
	JG ws2Cols
	VZEROUPPER
	RET
