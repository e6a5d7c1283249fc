//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"
#include "../avx512/lanes_amd64.h"
#include "tile_amd64.h"

#define FLAG_PF    32
#define FLAG_NOEPI 64

// func tileKernelWR(a *kernelArgs)
//
// The tile program with the loops the other way round: for each super-block
// of the K block, every token pair, so the row tile's 8 KiB of weight tiles
// for that super-block stay in L1 while the activations stream past (the
// incumbent tileKernel walks super-blocks inside each pair and re-reads the
// whole K block's panel, 69 KiB, from L2 for every pair). acc holds all
// pairs (⌈n/32⌉ × 32 tokens × 16 rows); each super-block's epilogue adds
// into it and the last one's result goes to dst under the row mask.
//
// The products of the next (super-block, pair) are issued before the
// current epilogue, as in tileKernel. With FLAG_PF the epilogue also
// prefetches the activations of the pair after next into L1.
//
// Registers: DI args, R8 weight super-block, R9 activations of the pair,
// R10 cbuf (two 4 KiB halves alternating by step), R11 acc of the pair,
// R12 super-blocks left, R13 activations of pair 0 at this super-block,
// R14 pairs left, BX the next step's activations; Z20-Z27 bsum
// coefficients, Z28 d, Z29 dmin. Frame: pairs-8, cbp-16 (VNNI_SUPERBLOCK),
// half-24 (cbuf half of this step).
TEXT ·tileKernelWR(SB), NOSPLIT, $32-8
	MOVQ a+0(FP), DI
	MOVQ ARG_CBUF(DI), R10
	MOVQ ARG_MASK(DI), AX
	KMOVW AX, K1

	ZERO_ALL_PAIRS

	MOVQ $0, half-24(SP)
	MOVQ ARG_W(DI), R8
	MOVQ ARG_X(DI), R13
	MOVQ ARG_NSB(DI), R12
	TESTQ $FLAG_AMX, ARG_FLAGS(DI)
	JZ   superblock
	MOVQ ARG_CFG(DI), AX
	LDTILECFG(AMX_AX)
	AMX_SUPERBLOCK(R8, 0, R13, 0)

superblock:
	EPI_COEFS
	MOVQ R13, R9
	MOVQ ARG_ACC(DI), R11
	MOVQ pairs-8(SP), R14

pair:
	MOVQ half-24(SP), SI
	XORQ $4096, half-24(SP)
	ADDQ R10, SI
	TESTQ $FLAG_AMX, ARG_FLAGS(DI)
	JZ   vnni

	// Store this step's C tiles, then start the next step's products: the
	// next pair at this super-block, or pair 0 of the next super-block.
	MOVQ $64, CX
	TILESTORE_C(AX, AMX_AX, AMX_CX)
	CMPQ R14, $1
	JEQ  nextsb
	MOVQ R9, BX
	ADDQ ARG_PAIR(DI), BX
	AMX_SUPERBLOCK(R8, 0, BX, 0)
	JMP  epilogue
nextsb:
	CMPQ R12, $1
	JEQ  epilogue
	LEAQ A_SB(R13), BX
	AMX_SUPERBLOCK(R8, W_SB, BX, 0)
	JMP  epilogue

vnni:
	VNNI_SUPERBLOCK

epilogue:
	TESTQ $FLAG_NOEPI, ARG_FLAGS(DI)
	JNZ   pairdone

	// Per token t of the pair: acc[t] += dx·(d·S − dmin·M) (Q4_K) or
	// dx·d·(S − M) (Q6_K), as tileKernel's epilogue.
	MOVQ SI, AX      // lo digits of token t; hi at +1024
	LEAQ A_D(R9), DX // dx of token t
	MOVQ $0, SI      // 32·t
	TESTQ $FLAG_PF, ARG_FLAGS(DI)
	JZ   noprefetch
	CMPQ R14, $2
	JLE  noprefetch // no pair after next at this super-block
	MOVQ ARG_PAIR(DI), CX
	LEAQ (R9)(CX*2), CX
	EPI_FORMS(EPI32_PF_TOKEN, epi32pf, epi32pfnext, EPIINT_PF_TOKEN, epiintpf, epiintpfnext, pairdone)
	JMP  pairdone

noprefetch:
	EPI_FORMS(EPI32_TOKEN, epi32, epi32next, EPIINT_TOKEN, epiint, epiintnext, pairdone)

pairdone:
	NEXT_PAIR
	ADDQ $W_SB, R8
	ADDQ $A_SB, R13
	DECQ R12
	JNZ  superblock

	ACC_STORE_ALL(store, storeplain)

	TILE_RETURN
