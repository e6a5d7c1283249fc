//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"

// Offsets of pack.go's layouts.
#define W_D      8192
#define W_DMIN   8256
#define W_COEF   8320
#define W_SB     8832
#define A_D      8192
#define A_BSUMS  8320
#define A_SB     9344

// kernelArgs fields.
#define ARG_W      0
#define ARG_X      8
#define ARG_DST    16
#define ARG_LDD    24
#define ARG_NSB    32
#define ARG_N      40
#define ARG_MASK   48
#define ARG_CBUF   56
#define ARG_ACC    64
#define ARG_CFG    72
#define ARG_FLAGS  80
#define ARG_PAIR   88

#define FLAG_AMX    1
#define FLAG_INTMIN 2
#define FLAG_ACC    4
#define FLAG_SUM32  8
#define FLAG_LAG    16

// One tile product chunk on AMX: A tiles tmm4, tmm5 (tokens 0-15, 16-31),
// B tiles tmm6 (lo digits), tmm7 (hi digits); C tmm0..3 = [token tile][digit].
// The four chunks of the super-block at R8+wo, R9+ao into zeroed C tiles.
#define AMX_SUPERBLOCK(wo, ao) \
	MOVQ $64, CX; \
	TILEZERO(0); \
	TILEZERO(1); \
	TILEZERO(2); \
	TILEZERO(3); \
	AMX_CHUNK2(0+wo, 0+ao); \
	AMX_CHUNK2(2048+wo, 2048+ao); \
	AMX_CHUNK2(4096+wo, 4096+ao); \
	AMX_CHUNK2(6144+wo, 6144+ao)

// Loads interleaved with the products that first need them, in the order
// the previous chunk's products free the tiles (A0 after its second
// product, Blo after its third): tile registers are not renamed, so a
// reload waits for the last reader.
#define AMX_CHUNK2(wo, ao) \
	LEAQ ao(R9), AX; \
	TILELOADD(4, AMX_AX, AMX_CX); \
	LEAQ wo(R8), DX; \
	TILELOADD(6, AMX_DX, AMX_CX); \
	TDPBSUD(0, 4, 6); \
	LEAQ (wo+1024)(R8), DX; \
	TILELOADD(7, AMX_DX, AMX_CX); \
	TDPBSUD(1, 4, 7); \
	LEAQ (ao+1024)(R9), AX; \
	TILELOADD(5, AMX_AX, AMX_CX); \
	TDPBSUD(2, 5, 6); \
	TDPBSUD(3, 5, 7)

// The epilogue's per-token steps shared by its three forms. EPI_DIGITS:
// Z0 = hi<<7 + lo of token t, Z1 = the first four bsum pairs times their
// coefficients; EPI_BSUMS8 adds the other four (sums of 16); EPI_NEXT scales
// Z0 by dx, adds it into acc and steps to the next token (flags set by
// comparing the token offset with the second token tile's).
#define EPI_DIGITS \
	VMOVDQU32 1024(AX), Z0; \
	VPSLLD    $7, Z0, Z0; \
	VPADDD    (AX), Z0, Z0; \
	VPXORD    Z1, Z1, Z1; \
	VPDPWSSD.BCST (A_BSUMS+0)(R9)(SI*1), Z20, Z1; \
	VPDPWSSD.BCST (A_BSUMS+4)(R9)(SI*1), Z21, Z1; \
	VPDPWSSD.BCST (A_BSUMS+8)(R9)(SI*1), Z22, Z1; \
	VPDPWSSD.BCST (A_BSUMS+12)(R9)(SI*1), Z23, Z1

#define EPI_BSUMS8 \
	VPDPWSSD.BCST (A_BSUMS+16)(R9)(SI*1), Z24, Z1; \
	VPDPWSSD.BCST (A_BSUMS+20)(R9)(SI*1), Z25, Z1; \
	VPDPWSSD.BCST (A_BSUMS+24)(R9)(SI*1), Z26, Z1; \
	VPDPWSSD.BCST (A_BSUMS+28)(R9)(SI*1), Z27, Z1

#define EPI_NEXT \
	VMULPS.BCST (DX), Z0, Z0; \
	VADDPS    (R11)(SI*2), Z0, Z0; \
	VMOVUPS   Z0, (R11)(SI*2); \
	ADDQ $64, AX; \
	ADDQ $4, DX; \
	ADDQ $32, SI; \
	CMPQ SI, $512

// func tileKernel(a *kernelArgs)
//
// For one row tile: for each pair of token tiles, for each super-block,
// the int32 digit products C[token tile][digit] (by AMX or by VPDPBUSD into
// the same 4 KiB cbuf layout TILESTORED writes), then the float epilogue
// into acc (32 tokens × 16 rows), then acc into dst under the row mask.
//
// Registers: DI args, R8 weight super-block, R9 activation super-block,
// R10 cbuf (two 4 KiB halves, alternating by super-block), R11 acc, R12 super-blocks left, R13 pair base, R14 tokens left,
// BX dst of the pair's first token; Z20-Z27 bsum coefficients, Z28 d,
// Z29 dmin.
TEXT ·tileKernel(SB), NOSPLIT, $32-8
	MOVQ a+0(FP), DI
	MOVQ ARG_CBUF(DI), R10
	MOVQ ARG_ACC(DI), R11
	MOVQ ARG_X(DI), R13
	MOVQ ARG_N(DI), R14
	MOVQ ARG_DST(DI), BX
	MOVQ ARG_MASK(DI), AX
	KMOVW AX, K1
	TESTQ $FLAG_AMX, ARG_FLAGS(DI)
	JZ   pair
	MOVQ ARG_CFG(DI), AX
	LDTILECFG(AMX_AX)

pair:
	// acc = 0
	VPXORD Z0, Z0, Z0
	MOVQ   $0, AX
zeroacc:
	VMOVUPS Z0, (R11)(AX*1)
	ADDQ    $64, AX
	CMPQ    AX, $2048
	JLT     zeroacc

	MOVQ ARG_W(DI), R8
	MOVQ R13, R9
	MOVQ ARG_NSB(DI), R12
	TESTQ $FLAG_AMX, ARG_FLAGS(DI)
	JZ    superblock
	AMX_SUPERBLOCK(0, 0)

superblock:
	// cbuf half of this super-block (R12 parity), 4 KiB each.
	MOVQ R12, SI
	ANDQ $1, SI
	SHLQ $12, SI
	ADDQ R10, SI
	TESTQ $FLAG_AMX, ARG_FLAGS(DI)
	JZ    vnni

	// Software pipeline: store this super-block's C tiles, start the next
	// one's tile products, and run this one's epilogue while they execute.
	MOVQ $64, CX
	TILESTORED(0, AMX_SI, AMX_CX)
	LEAQ 1024(SI), AX
	TILESTORED(1, AMX_AX, AMX_CX)
	LEAQ 2048(SI), AX
	TILESTORED(2, AMX_AX, AMX_CX)
	LEAQ 3072(SI), AX
	TILESTORED(3, AMX_AX, AMX_CX)
	CMPQ R12, $1
	JEQ  lagged
	AMX_SUPERBLOCK(W_SB, A_SB) // clobbers AX, CX, DX only
	JMP  lagged

vnni:
	// The same products with VPDPBUSD: for each (token tile j, digit x),
	// Z0-Z15 hold the 16 token rows of C; each k-quad of B is one load,
	// each token's 4 activation bytes an embedded broadcast.
	MOVQ BX, dstp-8(SP)
	MOVQ SI, cbp-16(SP)
	MOVQ $0, BX // combo j*2+x
combo:
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
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ BX, AX
	ANDQ $1, AX
	SHLQ $10, AX
	ADDQ R8, AX  // B: weights + x*1024
	MOVQ BX, SI
	SHRQ $1, SI
	SHLQ $10, SI
	ADDQ R9, SI  // A: activations + j*1024
	MOVQ $4, CX
vchunk:
	MOVQ $16, DX
vquad:
	VMOVDQU32 (AX), Z16
	VPDPBUSD.BCST 0(SI), Z16, Z0
	VPDPBUSD.BCST 64(SI), Z16, Z1
	VPDPBUSD.BCST 128(SI), Z16, Z2
	VPDPBUSD.BCST 192(SI), Z16, Z3
	VPDPBUSD.BCST 256(SI), Z16, Z4
	VPDPBUSD.BCST 320(SI), Z16, Z5
	VPDPBUSD.BCST 384(SI), Z16, Z6
	VPDPBUSD.BCST 448(SI), Z16, Z7
	VPDPBUSD.BCST 512(SI), Z16, Z8
	VPDPBUSD.BCST 576(SI), Z16, Z9
	VPDPBUSD.BCST 640(SI), Z16, Z10
	VPDPBUSD.BCST 704(SI), Z16, Z11
	VPDPBUSD.BCST 768(SI), Z16, Z12
	VPDPBUSD.BCST 832(SI), Z16, Z13
	VPDPBUSD.BCST 896(SI), Z16, Z14
	VPDPBUSD.BCST 960(SI), Z16, Z15
	ADDQ $64, AX
	ADDQ $4, SI
	DECQ DX
	JNZ  vquad
	ADDQ $1024, AX // next chunk: 2048 on from this chunk's start
	ADDQ $1984, SI // 2048 - 64
	DECQ CX
	JNZ  vchunk
	MOVQ BX, AX
	SHLQ $10, AX
	ADDQ cbp-16(SP), AX
	VMOVDQU32 Z0, 0(AX)
	VMOVDQU32 Z1, 64(AX)
	VMOVDQU32 Z2, 128(AX)
	VMOVDQU32 Z3, 192(AX)
	VMOVDQU32 Z4, 256(AX)
	VMOVDQU32 Z5, 320(AX)
	VMOVDQU32 Z6, 384(AX)
	VMOVDQU32 Z7, 448(AX)
	VMOVDQU32 Z8, 512(AX)
	VMOVDQU32 Z9, 576(AX)
	VMOVDQU32 Z10, 640(AX)
	VMOVDQU32 Z11, 704(AX)
	VMOVDQU32 Z12, 768(AX)
	VMOVDQU32 Z13, 832(AX)
	VMOVDQU32 Z14, 896(AX)
	VMOVDQU32 Z15, 960(AX)
	INCQ BX
	CMPQ BX, $4
	JLT  combo
	MOVQ dstp-8(SP), BX
	MOVQ cbp-16(SP), SI

lagged:
	// The epilogue lags one super-block behind the products: this one's
	// sums stay in their cbuf half while the previous super-block's half,
	// stored an iteration ago, is read. Vector loads right after TILESTORED
	// of the same lines wait for the tile stores to reach the cache (tile
	// stores do not forward), so reading the fresh half stalled every
	// super-block.
	// Without FLAG_LAG the epilogue reads the fresh half at once (the
	// incumbent program). final-32(SP): 0 no lag, 2 lagged, 1 the last.
	MOVQ SI, cur-24(SP)
	MOVQ $0, final-32(SP)
	TESTQ $FLAG_LAG, ARG_FLAGS(DI)
	JZ   epilogue
	CMPQ R12, ARG_NSB(DI)
	JEQ  sbdone // the pair's first super-block: nothing to finish yet
	MOVQ SI, AX
	SUBQ R10, AX
	XORQ $4096, AX
	LEAQ (R10)(AX*1), SI
	SUBQ $W_SB, R8
	SUBQ $A_SB, R9
	MOVQ $2, final-32(SP)

epilogue:
	// Per token t: S = hi<<7 + lo; M = Σ coef·bsums; acc[t] += dx·(d·S − dmin·M)
	// (Q4_K) or dx·d·(S − M) (Q6_K, FLAG_INTMIN).
	VMOVUPS W_D(R8), Z28
	VMOVUPS W_DMIN(R8), Z29
	VMOVDQU32 (W_COEF+0)(R8), Z20
	VMOVDQU32 (W_COEF+64)(R8), Z21
	VMOVDQU32 (W_COEF+128)(R8), Z22
	VMOVDQU32 (W_COEF+192)(R8), Z23
	VMOVDQU32 (W_COEF+256)(R8), Z24
	VMOVDQU32 (W_COEF+320)(R8), Z25
	VMOVDQU32 (W_COEF+384)(R8), Z26
	VMOVDQU32 (W_COEF+448)(R8), Z27
	MOVQ SI, AX           // lo digits of token t; hi at +1024
	LEAQ A_D(R9), DX      // dx of token t
	MOVQ $0, SI           // 32·t
	TESTQ $FLAG_INTMIN, ARG_FLAGS(DI)
	JNZ  epiint
	TESTQ $FLAG_SUM32, ARG_FLAGS(DI)
	JNZ  epi32

epitok:
	EPI_DIGITS
	EPI_BSUMS8
	VCVTDQ2PS Z0, Z0
	VCVTDQ2PS Z1, Z1
	VMULPS    Z28, Z0, Z0
	VFNMADD231PS Z29, Z1, Z0
	EPI_NEXT
	JNE  epinext
	ADDQ $1024, AX // token tile 1: its C rows start at cbuf+2048
epinext:
	CMPQ SI, $1024
	JLT  epitok
	JMP  epidone

epi32:
	EPI_DIGITS
	VCVTDQ2PS Z0, Z0
	VCVTDQ2PS Z1, Z1
	VMULPS    Z28, Z0, Z0
	VFNMADD231PS Z29, Z1, Z0
	EPI_NEXT
	JNE  epi32next
	ADDQ $1024, AX // token tile 1: its C rows start at cbuf+2048
epi32next:
	CMPQ SI, $1024
	JLT  epi32
	JMP  epidone

epiint:
	EPI_DIGITS
	EPI_BSUMS8
	VPSUBD    Z1, Z0, Z0
	VCVTDQ2PS Z0, Z0
	VMULPS    Z28, Z0, Z0
	EPI_NEXT
	JNE  epiintnext
	ADDQ $1024, AX
epiintnext:
	CMPQ SI, $1024
	JLT  epiint

epidone:
	// Back to the current super-block, or, after the last one's epilogue,
	// on to storing the pair.
	CMPQ final-32(SP), $0
	JEQ  sbdone
	ADDQ $W_SB, R8
	ADDQ $A_SB, R9
	CMPQ final-32(SP), $1
	JEQ  pairdone

sbdone:
	ADDQ $W_SB, R8
	ADDQ $A_SB, R9
	DECQ R12
	JNZ  superblock
	TESTQ $FLAG_LAG, ARG_FLAGS(DI)
	JZ   pairdone

	// The last super-block's epilogue, from the half it was stored in.
	MOVQ cur-24(SP), SI
	MOVQ $1, final-32(SP)
	SUBQ $W_SB, R8
	SUBQ $A_SB, R9
	JMP  epilogue

pairdone:
	// Store the pair's tokens: min(32, tokens left) rows of dst.
	MOVQ R14, CX
	CMPQ CX, $32
	JLE  storecount
	MOVQ $32, CX
storecount:
	SHLQ $6, CX
	MOVQ $0, SI
	MOVQ ARG_LDD(DI), DX
store:
	VMOVUPS (R11)(SI*1), Z0
	TESTQ $FLAG_ACC, ARG_FLAGS(DI)
	JZ    storeplain
	VMOVUPS.Z (BX), K1, Z1
	VADDPS Z1, Z0, Z0
storeplain:
	VMOVUPS Z0, K1, (BX)
	ADDQ DX, BX
	ADDQ $64, SI
	CMPQ SI, CX
	JLT  store

	ADDQ ARG_PAIR(DI), R13
	SUBQ $32, R14
	JGT  pair

	TESTQ $FLAG_AMX, ARG_FLAGS(DI)
	JZ   done
	TILERELEASE
done:
	VZEROUPPER
	RET
