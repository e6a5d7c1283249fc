//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"

#include "../avx512/lanes_amd64.h"
#include "tile_amd64.h"

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
	AMX_SUPERBLOCK(R8, 0, R9, 0)

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
	TILESTORE_C(AX, AMX_AX, AMX_CX)
	CMPQ R12, $1
	JEQ  lagged
	AMX_SUPERBLOCK(R8, W_SB, R9, A_SB)
	JMP  lagged

vnni:
	// The same products with VPDPBUSD.
	MOVQ BX, dstp-8(SP)
	VNNI_SUPERBLOCK
	MOVQ dstp-8(SP), BX

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
	EPI_COEFS
	MOVQ SI, AX           // lo digits of token t; hi at +1024
	LEAQ A_D(R9), DX      // dx of token t
	MOVQ $0, SI           // 32·t
	EPI_FORMS(EPI32_TOKEN, epi32, epi32next, EPIINT_TOKEN, epiint, epiintnext, epidone)

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
	ACC_STORE(store, storeplain)

	ADDQ ARG_PAIR(DI), R13
	SUBQ $32, R14
	JGT  pair

	TILE_RETURN
