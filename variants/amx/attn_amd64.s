//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"
#include "../avx512/exp_amd64.h"
#include "../avx512/lanes_amd64.h"

// attnArgs fields.
#define A_Q       0
#define A_KP      8
#define A_S       16
#define A_SSTRIDE 24
#define A_STEPS   32
#define A_KSTEPS  40
#define A_P       48
#define A_PSTRIDE 56
#define A_VP      64
#define A_HD      72
#define A_O       80
#define A_CFG     88
#define A_QSTRIDE 96

// Scores of one 32-position step, two 16-position blocks: C tmm0 (block 0)
// and tmm1 (block 1) += Q chunk (tmm q) · K chunk c, the K tiles of block 0
// at R8 + off0, of block 1 at R8 + off1 (64 bytes apart per row).
#define SCORE_CHUNK(q, off0, off1) \
	LEAQ off0(R8), AX; \
	TILELOADD(2, AMX_AX, AMX_CX); \
	TDPBF16PS(0, q, 2); \
	LEAQ off1(R8), AX; \
	TILELOADD(3, AMX_AX, AMX_CX); \
	TDPBF16PS(1, q, 3)

#define SCORE_STORE \
	TILESTORED(0, AMX_R9, AMX_R11); \
	LEAQ 64(R9), AX; \
	TILESTORED(1, AMX_AX, AMX_R11); \
	ADDQ $128, R9

// SCORE_NEXT ends a step of bytes of K tiles: the scores stored
// (SCORE_STORE), R8 to the next step, back to loop while steps are left.
#define SCORE_NEXT(bytes, loop) \
	SCORE_STORE; \
	ADDQ $bytes, R8; \
	DECQ R10; \
	JNZ  loop

// Q_CHUNKS2 loads Q's first two chunks (SI, stride BX) into tmm4, tmm5.
#define Q_CHUNKS2 \
	TILELOADD(4, AMX_SI, AMX_BX); \
	LEAQ 64(SI), AX; \
	TILELOADD(5, AMX_AX, AMX_BX)

// func attnScoresAMX(a *attnArgs)
//
// S = Q·Kᵀ for 16 query rows (bf16, A_QSTRIDE bytes apart at A_Q) against
// steps×32 positions of the K panel: per 16-position block, ksteps tiles of
// [16 dim pairs][16 positions][2 bf16]. S is float32, row r at A_S +
// r*A_SSTRIDE. With two or four chunks Q stays in tmm4..; with more (the
// split hi/lo rows of amx-bf16x3) its chunk is reloaded for every step.
TEXT ·attnScoresAMX(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ A_CFG(DI), AX
	LDTILECFG(AMX_AX)
	MOVQ A_Q(DI), SI
	MOVQ A_QSTRIDE(DI), BX
	MOVQ A_KP(DI), R8
	MOVQ A_S(DI), R9
	MOVQ A_SSTRIDE(DI), R11
	MOVQ A_STEPS(DI), R10
	MOVQ $64, CX
	MOVQ A_KSTEPS(DI), AX
	CMPQ AX, $4
	JEQ  s4
	CMPQ AX, $2
	JNE  sgen
	Q_CHUNKS2

s2:
	TILEZERO(0)
	TILEZERO(1)
	SCORE_CHUNK(4, 0, 2048)
	SCORE_CHUNK(5, 1024, 3072)
	SCORE_NEXT(4096, s2)
	JMP  sdone

s4:
	Q_CHUNKS2
	LEAQ 128(SI), AX
	TILELOADD(6, AMX_AX, AMX_BX)
	LEAQ 192(SI), AX
	TILELOADD(7, AMX_AX, AMX_BX)

s4step:
	TILEZERO(0)
	TILEZERO(1)
	SCORE_CHUNK(4, 0, 4096)
	SCORE_CHUNK(5, 1024, 5120)
	SCORE_CHUNK(6, 2048, 6144)
	SCORE_CHUNK(7, 3072, 7168)
	SCORE_NEXT(8192, s4step)
	JMP  sdone

	// Any number of chunks: R13 = one block's tiles in bytes, R14 the
	// chunk of block 0, SI the Q chunk, R12 chunks left.
sgen:
	MOVQ AX, R13
	SHLQ $10, R13

sgstep:
	TILEZERO(0)
	TILEZERO(1)
	MOVQ A_Q(DI), SI
	MOVQ R8, R14
	MOVQ A_KSTEPS(DI), R12

sgchunk:
	TILELOADD(4, AMX_SI, AMX_BX)
	TILELOADD(2, AMX_R14, AMX_CX)
	TDPBF16PS(0, 4, 2)
	LEAQ (R14)(R13*1), AX
	TILELOADD(3, AMX_AX, AMX_CX)
	TDPBF16PS(1, 4, 3)
	ADDQ $64, SI
	ADDQ $1024, R14
	DECQ R12
	JNZ  sgchunk
	SCORE_STORE
	LEAQ (R8)(R13*2), R8
	DECQ R10
	JNZ  sgstep

sdone:
	TILERELEASE
	RET

// func attnPVAMX(a *attnArgs)
//
// O = P·V for 16 query rows: P bf16 at A_P (A_PSTRIDE bytes per row), V
// panel per 32-position step of [16 position pairs][hd dims][2 bf16]. O is
// float32 [16][hd]. Dims go 64 at a time: C tmm0..3, P tile tmm4, V tiles
// tmm5..7. (No tile instruction may take BP or R13 as its base: with the
// SIB encoding of amx_amd64.h that means "no base, disp32 follows".)
TEXT ·attnPVAMX(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ A_CFG(DI), AX
	LDTILECFG(AMX_AX)
	MOVQ A_HD(DI), R12
	SHLQ $2, R12             // V panel row and O row: hd*4 bytes
	MOVQ R12, DX
	SHLQ $4, DX              // one step of the V panel: 16 rows
	MOVQ A_PSTRIDE(DI), R11
	MOVQ A_O(DI), SI
	MOVQ A_VP(DI), R14
	MOVQ A_HD(DI), BX
	SHRQ $6, BX              // groups of 64 dims

pvgroup:
	TILEZERO(0)
	TILEZERO(1)
	TILEZERO(2)
	TILEZERO(3)
	MOVQ A_P(DI), R8
	MOVQ R14, R9
	MOVQ A_STEPS(DI), R10

pvstep:
	TILELOADD(4, AMX_R8, AMX_R11)
	TILELOADD(5, AMX_R9, AMX_R12)
	TDPBF16PS(0, 4, 5)
	LEAQ 64(R9), AX
	TILELOADD(6, AMX_AX, AMX_R12)
	TDPBF16PS(1, 4, 6)
	LEAQ 128(R9), AX
	TILELOADD(7, AMX_AX, AMX_R12)
	TDPBF16PS(2, 4, 7)
	LEAQ 192(R9), AX
	TILELOADD(5, AMX_AX, AMX_R12)
	TDPBF16PS(3, 4, 5)
	ADDQ $64, R8
	ADDQ DX, R9
	DECQ R10
	JNZ  pvstep

	TILESTORE4(SI, AMX_SI, 64, AX, AMX_AX, AMX_R12)
	ADDQ $256, SI
	ADDQ $256, R14
	DECQ BX
	JNZ  pvgroup
	TILERELEASE
	RET

DATA bf16Const<>+0(SB)/4, $0x00007fff
DATA bf16Const<>+4(SB)/4, $0x00000001
DATA bf16Const<>+8(SB)/4, $0xffff0000
GLOBL bf16Const<>(SB), RODATA|NOPTR, $12

#define BF16_CONSTS \
	VPBROADCASTD bf16Const<>+0(SB), Z19; \
	VPBROADCASTD bf16Const<>+4(SB), Z18; \
	VPBROADCASTD bf16Const<>+8(SB), Z17

// z (float32 bits, finite) rounded to nearest even at bf16 precision: the
// bf16 is z's high 16 bits. Clobbers Z1.
#define ROUND_BF16(z) \
	VPSRLD $16, z, Z1; \
	VPANDD Z18, Z1, Z1; \
	VPADDD Z19, z, z; \
	VPADDD Z1, z, z

// STORE_BF16_Z0 stores the bf16s of Z0 (rounded: the high 16 bits of each
// lane) at dst, 32 bytes.
#define STORE_BF16_Z0(dst) \
	VPSRLD $16, Z0, Z0; \
	VPMOVDW Z0, Y0; \
	VMOVDQU Y0, dst

// BF16_HI_RES splits x (float32, finite) into hi, its bf16 as a float32
// (the bf16 in the high 16 bits, the low ones zero), and x - hi left in x
// (exact). Clobbers Z1.
#define BF16_HI_RES(x, hi) \
	VMOVAPS x, hi; \
	ROUND_BF16(hi); \
	VPANDD  Z17, hi, hi; \
	VSUBPS  hi, x, x

// SPLIT_STORE_Z4 stores Z4 (float32) as bf16 pairs: hi at hidst, lo =
// bf16(Z4 - hi) at lodst, 32 bytes each. Clobbers Z0, Z1, Z4.
#define SPLIT_STORE_Z4(hidst, lodst) \
	BF16_HI_RES(Z4, Z0); \
	STORE_BF16_Z0(hidst); \
	VMOVAPS Z4, Z0; \
	ROUND_BF16(Z0); \
	STORE_BF16_Z0(lodst)

// PAIR_BF16 rounds a and b (float32) to bf16 and leaves a's in the low and
// b's in the high half of each dword of a. Clobbers Z1, b.
#define PAIR_BF16(a, b) \
	ROUND_BF16(a); \
	VPSRLD $16, a, a; \
	ROUND_BF16(b); \
	VPANDD Z17, b, b; \
	VPORD  b, a, a

// func cvtBF16Scaled(dst *uint16, src *float32, n int, scale float32)
//
// dst[i] = bf16(src[i]·scale), rounded to nearest even; n a positive
// multiple of 16, values finite.
TEXT ·cvtBF16Scaled(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), DX
	VBROADCASTSS scale+24(FP), Z2
	BF16_CONSTS

cvt:
	VMULPS (SI), Z2, Z0
	ROUND_BF16(Z0)
	STORE_BF16_Z0((DI))
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, DX
	JG   cvt
	VZEROUPPER
	RET

// func cvtBF16Split(hi, lo *uint16, src *float32, n int, scale float32)
//
// hi[i] = bf16(x), lo[i] = bf16(x - hi[i]) for x = src[i]·scale: hi + lo
// carries 16 significant bits. n a positive multiple of 16, values finite.
TEXT ·cvtBF16Split(SB), NOSPLIT, $0-36
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), DX
	VBROADCASTSS scale+32(FP), Z2
	BF16_CONSTS

split:
	VMULPS (SI), Z2, Z4
	SPLIT_STORE_Z4((DI), (R8))
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, R8
	SUBQ $16, DX
	JG   split
	VZEROUPPER
	RET

// func interleaveBF16(dst *uint32, a, b *float32, n int)
//
// dst[i] = bf16(a[i]) | bf16(b[i])<<16: two positions' values for one
// dimension side by side, a row of a VNNI-layout B tile. n a positive
// multiple of 16, values finite.
TEXT ·interleaveBF16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), R8
	MOVQ n+24(FP), DX
	BF16_CONSTS

ilv:
	VMOVUPS (SI), Z0
	VMOVUPS (R8), Z3
	PAIR_BF16(Z0, Z3)
	VMOVDQU32 Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	SUBQ $16, DX
	JG   ilv
	VZEROUPPER
	RET

// SOFTMAX_NORM is the softmaxes' first two passes over s[:n] (R12 = s,
// R13 = n, Z11 = scale broadcast): the maximum, then s[i] = exp(scale·(s[i]
// - max)) and Z10 = 1/sum. Labels smax and sexp: once per function.
#define SOFTMAX_NORM \
	MOVQ R12, SI; \
	MOVQ R13, BX; \
	MOVL $0xff800000, AX; \
	VPBROADCASTD AX, Z8; \
	VMOVAPS Z8, Z9; \
smax: \
	SOFTMAX_MAX_STEP; \
	ADDQ $64, SI; \
	SUBQ $16, BX; \
	JG   smax; \
	ALL_LANES(VMAXPS, Z9); \
	EXP_CONSTS; \
	VPXORD Z10, Z10, Z10; \
	MOVQ R12, SI; \
	MOVQ R13, BX; \
sexp: \
	MASK16(BX); \
	VMOVUPS.Z (SI), K1, Z0; \
	VSUBPS Z9, Z0, Z0; \
	VMULPS Z11, Z0, Z0; \
	EXP; \
	VMOVAPS.Z Z0, K1, Z0; \
	VMOVUPS Z0, K1, (SI); \
	VADDPS Z0, Z10, Z10; \
	ADDQ $64, SI; \
	SUBQ $16, BX; \
	JG   sexp; \
	ALL_LANES(VADDPS, Z10); \
	VDIVPS Z10, Z22, Z10

// SOFTMAX_BF16_START is the two softmaxes' first half: the row's scores
// (s, n) normalized in place at scale (SOFTMAX_NORM), the bf16 rounding
// constants loaded.
#define SOFTMAX_BF16_START(s, n, scale) \
	MOVQ s, R12; \
	MOVQ n, R13; \
	VBROADCASTSS scale, Z11; \
	SOFTMAX_NORM; \
	BF16_CONSTS

// func softmaxBF16(p *uint16, s *float32, n, npad int, scale float32)
//
// p[i] = bf16(softmax(scale·s[:n])[i]) for i < n and 0 for n ≤ i < npad
// (npad a multiple of 16, n ≥ 1, scale > 0); s[:n] is left holding
// exp(scale·(s[i] - max)). The scale is applied to the float32 scores, as
// llama.cpp's soft_max does, rather than to the queries before rounding.
TEXT ·softmaxBF16(SB), NOSPLIT, $0-36
	SOFTMAX_BF16_START(s+8(FP), n+16(FP), scale+32(FP))
	MOVQ p+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), BX
	MOVQ npad+24(FP), DX

sout:
	MASK16(BX)
	VMOVUPS.Z (SI), K1, Z0
	VMULPS Z10, Z0, Z0
	ROUND_BF16(Z0)
	STORE_BF16_Z0((DI))
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, BX
	SUBQ $16, DX
	JG   sout
	VZEROUPPER
	RET

// func softmaxBF16Split(hi, lo *uint16, s *float32, n, npad int, scale float32)
//
// softmaxBF16 with each probability p as a bf16 pair: hi[i] = bf16(p),
// lo[i] = bf16(p - hi[i]) (hi + lo carries 16 significant bits), both 0
// for n ≤ i < npad.
TEXT ·softmaxBF16Split(SB), NOSPLIT, $0-44
	SOFTMAX_BF16_START(s+16(FP), n+24(FP), scale+40(FP))
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), R8
	MOVQ s+16(FP), SI
	MOVQ n+24(FP), BX
	MOVQ npad+32(FP), DX

soutsplit:
	MASK16(BX)
	VMOVUPS.Z (SI), K1, Z0
	VMULPS Z10, Z0, Z4
	SPLIT_STORE_Z4((DI), (R8))
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, R8
	SUBQ $16, BX
	SUBQ $16, DX
	JG   soutsplit
	VZEROUPPER
	RET

// func interleaveBF16Split(hi, lo *uint32, a, b *float32, n int)
//
// interleaveBF16 of the values as bf16 pairs: hi[i] = bf16(a[i]) |
// bf16(b[i])<<16, lo[i] the same of the residuals a[i] - hi's a, b[i] -
// hi's b (hi + lo carries 16 significant bits). n a positive multiple of
// 16, values finite.
TEXT ·interleaveBF16Split(SB), NOSPLIT, $0-40
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), R9
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), R8
	MOVQ n+32(FP), DX
	BF16_CONSTS

ilvs:
	VMOVUPS (SI), Z4
	BF16_HI_RES(Z4, Z0) // a's hi; Z4 its residual
	VPSRLD  $16, Z0, Z0
	VMOVUPS (R8), Z5
	BF16_HI_RES(Z5, Z6) // b's hi, its bf16 in the high half; Z5 its residual
	VPORD   Z6, Z0, Z0
	VMOVDQU32 Z0, (DI)
	PAIR_BF16(Z4, Z5)
	VMOVDQU32 Z4, (R9)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	ADDQ $64, R9
	SUBQ $16, DX
	JG   ilvs
	VZEROUPPER
	RET
