//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"
#include "../avx512/lanes_amd64.h"
#include "tile_amd64.h"

// tileKernelIL is tileKernelWR (super-blocks outside, token pairs inside)
// with the next step's tile products interleaved with this step's epilogue,
// a quarter of each at a time: one chunk (4 loads, 4 TDPBSUD), then eight
// tokens of the epilogue. In tileKernelWR the next step's 16 products all
// sit in the reorder buffer ahead of the epilogue and retire in order, one
// per 16 cycles, so the epilogue's 500 µops wait on them; here the tile
// unit is fed as the epilogue proceeds. AMX only (no VPDPBUSD path). The
// epilogue always prefetches the step after next (see PF5).
//
// Registers: DI args, R8 weight super-block, R9 activations of the pair,
// R11 acc of the pair, R14 pairs left; the next step's weights R13 and
// activations BX; tile addressing R10 (address) and R12 (stride 64); the
// epilogue AX, DX, SI, CX (prefetch). Frame: pairs-8, half-24 (cbuf half),
// sbl-32 (super-blocks left), a0-40 (activations of pair 0 at this
// super-block).

// Tile products of one 64-wide chunk with R10/R12 addressing.
#define IL_CHUNK(wb, wo, ab, ao) AMX_CHUNK_R(wb, wo, ab, ao, R10, AMX_R10, R10, AMX_R10, AMX_R12)

// The four operand loads and the four products of IL_CHUNK apart, for
// FLAG_EARLY: the next step's chunk-0 operands are loaded before this
// step's TILESTOREDs, so they overlap the last products and the stores.
#define IL_LOADS(wb, wo, ab, ao) \
	LEAQ ao(ab), R10; \
	TILELOADD(4, AMX_R10, AMX_R12); \
	LEAQ wo(wb), R10; \
	TILELOADD(6, AMX_R10, AMX_R12); \
	LEAQ (wo+1024)(wb), R10; \
	TILELOADD(7, AMX_R10, AMX_R12); \
	LEAQ (ao+1024)(ab), R10; \
	TILELOADD(5, AMX_R10, AMX_R12)

#define IL_TDPS \
	TDPBSUD(0, 4, 6); \
	TDPBSUD(1, 4, 7); \
	TDPBSUD(2, 5, 6); \
	TDPBSUD(3, 5, 7)

#define FLAG_EARLY 128

// IL_REST is a step after its chunk-0 products: eight tokens of the
// epilogue (epi8) after each of chunks 0-2, the products of chunks 1-3
// between them, and the switch to the second token tile's C rows
// (cbuf+2048) after the sixteenth token.
#define IL_REST(epi8) \
	epi8; \
	IL_CHUNK(R13, 2048, BX, 2048); \
	epi8; \
	ADDQ $1024, AX; \
	IL_CHUNK(R13, 4096, BX, 4096); \
	epi8; \
	IL_CHUNK(R13, 6144, BX, 6144); \
	epi8

#define IL_ZERO \
	TILEZERO(0); \
	TILEZERO(1); \
	TILEZERO(2); \
	TILEZERO(3)

#define EPI32_8 \
	EPI32_PF_TOKEN; \
	EPI32_PF_TOKEN; \
	EPI32_PF_TOKEN; \
	EPI32_PF_TOKEN; \
	EPI32_PF_TOKEN; \
	EPI32_PF_TOKEN; \
	EPI32_PF_TOKEN; \
	EPI32_PF_TOKEN

#define EPIINT_8 \
	EPIINT_PF_TOKEN; \
	EPIINT_PF_TOKEN; \
	EPIINT_PF_TOKEN; \
	EPIINT_PF_TOKEN; \
	EPIINT_PF_TOKEN; \
	EPIINT_PF_TOKEN; \
	EPIINT_PF_TOKEN; \
	EPIINT_PF_TOKEN

// func tileKernelIL(a *kernelArgs)
TEXT ·tileKernelIL(SB), NOSPLIT, $48-8
	MOVQ a+0(FP), DI
	MOVQ ARG_MASK(DI), AX
	KMOVW AX, K1

	ZERO_ALL_PAIRS

	MOVQ $0, half-24(SP)
	MOVQ ARG_NSB(DI), AX
	MOVQ AX, sbl-32(SP)
	MOVQ ARG_X(DI), BX
	MOVQ BX, a0-40(SP)
	MOVQ ARG_W(DI), R8
	MOVQ $64, R12
	MOVQ ARG_CFG(DI), AX
	LDTILECFG(AMX_AX)
	IL_ZERO
	IL_CHUNK(R8, 0, BX, 0)
	IL_CHUNK(R8, 2048, BX, 2048)
	IL_CHUNK(R8, 4096, BX, 4096)
	IL_CHUNK(R8, 6144, BX, 6144)

superblock:
	EPI_COEFS
	MOVQ a0-40(SP), R9
	MOVQ ARG_ACC(DI), R11
	MOVQ pairs-8(SP), R14

pair:
	TESTQ $FLAG_EARLY, ARG_FLAGS(DI)
	JZ   stores
	CMPQ R14, $1
	JEQ  earlynextsb
	MOVQ R9, BX
	ADDQ ARG_PAIR(DI), BX
	MOVQ R8, R13
	JMP  earlyload
earlynextsb:
	CMPQ sbl-32(SP), $1
	JEQ  stores // the last step: nothing to load
	MOVQ a0-40(SP), BX
	ADDQ $A_SB, BX
	LEAQ W_SB(R8), R13
earlyload:
	IL_LOADS(R13, 0, BX, 0)

stores:
	MOVQ half-24(SP), SI
	XORQ $4096, half-24(SP)
	ADDQ ARG_CBUF(DI), SI
	TILESTORE_C(R10, AMX_R10, AMX_R12)

	// Epilogue pointers; CX the step after next for the prefetches: two
	// pairs on at this super-block, else pair 2−R14 of the next one (past
	// the K block at its end, which prefetching does not mind).
	MOVQ SI, AX      // lo digits of token t; hi at +1024
	LEAQ A_D(R9), DX // dx of token t
	MOVQ ARG_PAIR(DI), CX
	CMPQ R14, $2
	JLE  pfnextsb
	LEAQ (R9)(CX*2), CX
	JMP  pfset
pfnextsb:
	MOVQ $2, R10
	SUBQ R14, R10
	IMULQ R10, CX
	ADDQ a0-40(SP), CX
	ADDQ $A_SB, CX
pfset:
	MOVQ $0, SI // 32·t

	// The next step: the next pair here, or pair 0 of the next super-block.
	CMPQ R14, $1
	JEQ  nextsb
	MOVQ R9, BX
	ADDQ ARG_PAIR(DI), BX
	MOVQ R8, R13
	JMP  interleave
nextsb:
	CMPQ sbl-32(SP), $1
	JEQ  last
	MOVQ a0-40(SP), BX
	ADDQ $A_SB, BX
	LEAQ W_SB(R8), R13

interleave:
	IL_ZERO
	TESTQ $FLAG_EARLY, ARG_FLAGS(DI)
	JNZ  early
	TESTQ $FLAG_INTMIN, ARG_FLAGS(DI)
	JNZ  interleaveint
	IL_CHUNK(R13, 0, BX, 0)
	IL_REST(EPI32_8)
	JMP  pairdone

interleaveint:
	IL_CHUNK(R13, 0, BX, 0)
	IL_REST(EPIINT_8)
	JMP  pairdone

early:
	// As above, chunk 0's operands already loaded (FLAG_EARLY).
	TESTQ $FLAG_INTMIN, ARG_FLAGS(DI)
	JNZ  earlyint
	IL_TDPS
	IL_REST(EPI32_8)
	JMP  pairdone

earlyint:
	IL_TDPS
	IL_REST(EPIINT_8)
	JMP  pairdone

last:
	// The last step: no products left to interleave.
	MOVQ ARG_CBUF(DI), CX // PF5's target: no step after next, so lines already in cache
	EPI_FORMS(EPI32_PF_TOKEN, last32, last32next, EPIINT_PF_TOKEN, lastint, lastintnext, pairdone)

pairdone:
	NEXT_PAIR
	ADDQ $W_SB, R8
	MOVQ a0-40(SP), AX
	ADDQ $A_SB, AX
	MOVQ AX, a0-40(SP)
	DECQ sbl-32(SP)
	JNZ  superblock

	ACC_STORE_ALL(store, storeplain)

	TILERELEASE
	VZEROUPPER
	RET
