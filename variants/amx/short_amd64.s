//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"

// r16sKernel (short.go): the batched decode product of up to 16 tokens over
// the interleaved Q4_K layout (variants/avx512's q4kr16.go) on AMX, one
// tile product a sub-block. A layout line's low nibbles are, as they
// stand, a row of the VNNI-ordered B tile of one k-quad (16 rows × 4
// bytes), its high nibbles the row four k-quads on; so a super-block's
// 32 lines unpack (an AND, a shift and an AND) into eight B tiles of
// 8 × 64 bytes, one a sub-block, and each sub-block is one TDPBSUD of
// the tokens' 32 activations (an A tile read in place from the prepared
// activations, xstride apart) into C = 16 tokens × 16 rows of int32
// sums. No two-digit split: each sub-block's sums are exact, and the
// scales apply in float a token at a time, as avx512-vnni-r16-f8 applies
// them: p = Σ_s float(C_s)·(d·sc_s), less dmin·float(mins), f += dx·p.
// Every token's float operations are the same whatever the number of
// tokens, so its results do not depend on the others.
//
// Without FLAG_AMX each C row is made by eight VPDPBUSDs instead (the
// twin that tests the unpacking, the epilogue and the driver on machines
// without AMX; not a rival).
//
// Registers: DI the argument block; SI the weights at the current
// super-block; R8 token 0's activations there; R9 xstride; R10 bbuf; R11
// cbuf; R12 super-blocks left; R13 groups left; DX the group's dst; CX
// 64 (the twin's token count while it runs); AX, BX temporaries. Z0-Z15 the tokens' float sums; Z16-Z23 d·sc of
// the sub-blocks; Z24-Z27 the mins pairs' words; Z28 dmin; Z29 0x0f
// bytes; Z30, Z31 temporaries.

// The argument block (shortArgs in short.go).
#define SA_W       0
#define SA_X       8
#define SA_XSTRIDE 16
#define SA_DST     24
#define SA_LDD     32
#define SA_NB      40
#define SA_GROUPS  48
#define SA_N       56
#define SA_BBUF    64
#define SA_CBUF    72
#define SA_CFG     80
#define SA_FLAGS   88
#define SA_SBUF    96

#define FLAG_AMX 1

// S_UNPACK splits line g of sub-block s into its B rows g (low nibbles)
// and 4+g (high) of bbuf's tile s.
#define S_UNPACK(s, g) \
	VMOVDQU64 (320+((s)*4+(g))*64)(SI), Z30; \
	VPANDD    Z29, Z30, Z31; \
	VMOVDQU64 Z31, ((s)*512+(g)*64)(R10); \
	VPSRLW    $4, Z30, Z30; \
	VPANDD    Z29, Z30, Z30; \
	VMOVDQU64 Z30, ((s)*512+(4+(g))*64)(R10)

#define S_UNPACK_SUB(s) S_UNPACK(s, 0); S_UNPACK(s, 1); S_UNPACK(s, 2); S_UNPACK(s, 3)

// S_SCALE sets z to d·sc of sub-block s (d in Z31).
#define S_SCALE(s, z) \
	VPMOVZXBD (64+16*(s))(SI), z; \
	VCVTDQ2PS z, z; \
	VMULPS    Z31, z, z

// G_TILE is one sub-block's tile product on AMX: C tile c zeroed, then
// C += A (tile a: the tokens' activations at R8 + aoff, their stride R9)
// · B (tile b: bbuf + boff, rows 64 bytes apart).
#define G_TILE(aoff, boff, c, a, b) \
	TILEZERO(c); \
	LEAQ aoff(R8), AX; \
	TILELOADD(a, AMX_AX, AMX_R9); \
	LEAQ boff(R10), BX; \
	TILELOADD(b, AMX_BX, AMX_CX); \
	TDPBSUD(c, a, b)

// S_TILE is Q4_K sub-block s: 32 activations, bbuf's tile s of 8 rows.
#define S_TILE(s, c, a, b) G_TILE((32*(s)), ((s)*512), c, a, b)

// S_STORE4 stores C tiles 0-3 as sub-blocks s0..s0+3 of cbuf (1 KiB each:
// a token's 16 sums a 64-byte row).
#define S_STORE4(s0) \
	LEAQ ((s0)*1024)(R11), BX; TILESTORED(0, AMX_BX, AMX_CX); \
	LEAQ ((s0+1)*1024)(R11), BX; TILESTORED(1, AMX_BX, AMX_CX); \
	LEAQ ((s0+2)*1024)(R11), BX; TILESTORED(2, AMX_BX, AMX_CX); \
	LEAQ ((s0+3)*1024)(R11), BX; TILESTORED(3, AMX_BX, AMX_CX)

// S_VROW is the twin's C row of sub-block s for the token at AX: eight
// VPDPBUSDs into Z31, stored at BX.
#define S_VROW(s) \
	VPXORD Z31, Z31, Z31; \
	VMOVDQU64 ((s)*512)(R10), Z30; VPDPBUSD.BCST (32*(s))(AX), Z30, Z31; \
	VMOVDQU64 ((s)*512+64)(R10), Z30; VPDPBUSD.BCST (32*(s)+4)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*512+128)(R10), Z30; VPDPBUSD.BCST (32*(s)+8)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*512+192)(R10), Z30; VPDPBUSD.BCST (32*(s)+12)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*512+256)(R10), Z30; VPDPBUSD.BCST (32*(s)+16)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*512+320)(R10), Z30; VPDPBUSD.BCST (32*(s)+20)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*512+384)(R10), Z30; VPDPBUSD.BCST (32*(s)+24)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*512+448)(R10), Z30; VPDPBUSD.BCST (32*(s)+28)(AX), Z30, Z31; \
	VMOVDQU64 Z31, ((s)*1024)(BX)

// S_P sets Z30 to token t's super-block before dx (activations at AX,
// its C rows at cbuf + 64t): Σ_s float(C_s)·(d·sc_s), less dmin times its
// mins.
#define S_P(t) \
	VCVTDQ2PS    (0*1024+64*(t))(R11), Z30; VMULPS Z16, Z30, Z30; \
	VCVTDQ2PS    (1*1024+64*(t))(R11), Z31; VFMADD231PS Z17, Z31, Z30; \
	VCVTDQ2PS    (2*1024+64*(t))(R11), Z31; VFMADD231PS Z18, Z31, Z30; \
	VCVTDQ2PS    (3*1024+64*(t))(R11), Z31; VFMADD231PS Z19, Z31, Z30; \
	VCVTDQ2PS    (4*1024+64*(t))(R11), Z31; VFMADD231PS Z20, Z31, Z30; \
	VCVTDQ2PS    (5*1024+64*(t))(R11), Z31; VFMADD231PS Z21, Z31, Z30; \
	VCVTDQ2PS    (6*1024+64*(t))(R11), Z31; VFMADD231PS Z22, Z31, Z30; \
	VCVTDQ2PS    (7*1024+64*(t))(R11), Z31; VFMADD231PS Z23, Z31, Z30; \
	VPXORD       Z31, Z31, Z31; \
	VPDPWSSD.BCST 256(AX), Z24, Z31; \
	VPDPWSSD.BCST 260(AX), Z25, Z31; \
	VPDPWSSD.BCST 264(AX), Z26, Z31; \
	VPDPWSSD.BCST 268(AX), Z27, Z31; \
	VCVTDQ2PS    Z31, Z31; \
	VFNMADD231PS Z28, Z31, Z30

// S_EPI is token t's super-block into its float sums f (f += dx·Z30);
// jumps to end when t is past n.
#define S_EPI(t, f, end) \
	CMPQ SA_N(DI), $(t+1); JLT end; \
	S_P(t); \
	VFMADD231PS.BCST 272(AX), Z30, f; \
	ADDQ R9, AX

// S_OUT stores token t's sums f at BX and steps BX a dst row on.
#define S_OUT(t, f, end) \
	CMPQ SA_N(DI), $(t+1); JLT end; \
	VMOVUPS f, (BX); \
	ADDQ SA_LDD(DI), BX

#define S_ZERO4(a, b, c, d) VPXORD a, a, a; VPXORD b, b, b; VPXORD c, c, c; VPXORD d, d, d

// S_PROLOGUE loads the argument block's pointers and counts into their
// registers (see above) and Z29 with 0x0f bytes.
#define S_PROLOGUE \
	MOVQ a+0(FP), DI; MOVQ SA_W(DI), SI; MOVQ SA_XSTRIDE(DI), R9; \
	MOVQ SA_BBUF(DI), R10; MOVQ SA_CBUF(DI), R11; MOVQ SA_DST(DI), DX; \
	MOVQ SA_GROUPS(DI), R13; MOVQ $64, CX; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z29

#define S_ZERO16 \
	S_ZERO4(Z0, Z1, Z2, Z3); S_ZERO4(Z4, Z5, Z6, Z7); \
	S_ZERO4(Z8, Z9, Z10, Z11); S_ZERO4(Z12, Z13, Z14, Z15)

// S_EPI16 runs epi (S_EPI or T6_EPI) for the 16 tokens, leaving at end.
#define S_EPI16(epi, end) \
	epi(0, Z0, end); epi(1, Z1, end); epi(2, Z2, end); epi(3, Z3, end); \
	epi(4, Z4, end); epi(5, Z5, end); epi(6, Z6, end); epi(7, Z7, end); \
	epi(8, Z8, end); epi(9, Z9, end); epi(10, Z10, end); epi(11, Z11, end); \
	epi(12, Z12, end); epi(13, Z13, end); epi(14, Z14, end); epi(15, Z15, end)

#define S_OUT16(end) \
	S_OUT(0, Z0, end); S_OUT(1, Z1, end); S_OUT(2, Z2, end); S_OUT(3, Z3, end); \
	S_OUT(4, Z4, end); S_OUT(5, Z5, end); S_OUT(6, Z6, end); S_OUT(7, Z7, end); \
	S_OUT(8, Z8, end); S_OUT(9, Z9, end); S_OUT(10, Z10, end); S_OUT(11, Z11, end); \
	S_OUT(12, Z12, end); S_OUT(13, Z13, end); S_OUT(14, Z14, end); S_OUT(15, Z15, end)

// S_TEXT is a short-step kernel's text: consts (more constants), then per
// group and super-block prep (its B tiles into bbuf and what the epilogue
// needs), the C tiles by amx (on AMX) or the twin's rows (vrows, for the
// token at AX into BX + 1024s), epiprep, the tokens' epilogues (epi), and
// the step to the next super-block (wstep weight bytes, xstep activation
// bytes); each group's sums stored at its dst.
#define S_TEXT(consts, prep, amx, vrows, epiprep, epi, wstep, xstep) \
	S_START(consts); \
group: \
	S_ZERO16; \
	MOVQ SA_X(DI), R8; MOVQ SA_NB(DI), R12; \
block: \
	prep; \
	S_PRODUCTS(amx, vrows); \
epilogue: \
	epiprep; \
	MOVQ R8, AX; \
	S_EPI16(epi, epidone); \
epidone: \
	ADDQ $wstep, SI; ADDQ $xstep, R8; \
	DECQ R12; JNZ block; \
	S_GROUP_END

// S_START loads the registers (S_PROLOGUE) and consts, leaves for done
// when there is nothing to do, and configures the tiles on AMX.
#define S_START(consts) \
	S_PROLOGUE; consts; \
	TESTQ R13, R13; JZ done; \
	CMPQ SA_NB(DI), $0; JEQ done; \
	TESTQ $FLAG_AMX, SA_FLAGS(DI); JZ group; \
	MOVQ SA_CFG(DI), AX; LDTILECFG(AMX_AX)

// S_PRODUCTS makes the C tiles of the super-block at R8 (activations)
// and R10 (B tiles) into R11: amx on AMX, else the twin's rows (vrows)
// token by token; then jumps to the label epilogue.
#define S_PRODUCTS(amx, vrows) \
	TESTQ $FLAG_AMX, SA_FLAGS(DI); JZ vnni; \
	amx; \
	JMP epilogue; \
vnni: \
	MOVQ R8, AX; MOVQ R11, BX; MOVQ SA_N(DI), CX; \
vtoken: \
	vrows; \
	ADDQ R9, AX; ADDQ $64, BX; DECQ CX; JNZ vtoken; \
	MOVQ $64, CX

// S_GROUP_END stores the group's sums, steps to the next group (back to
// the label group) and, after the last, releases the tiles and returns.
#define S_GROUP_END \
	MOVQ DX, BX; \
	S_OUT16(outdone); \
outdone: \
	ADDQ $64, DX; \
	DECQ R13; JNZ group; \
	TESTQ $FLAG_AMX, SA_FLAGS(DI); JZ done; \
	TILERELEASE; \
done: \
	VZEROUPPER; \
	RET

#define S_PREP \
	S_UNPACK_SUB(0); S_UNPACK_SUB(1); S_UNPACK_SUB(2); S_UNPACK_SUB(3); \
	S_UNPACK_SUB(4); S_UNPACK_SUB(5); S_UNPACK_SUB(6); S_UNPACK_SUB(7)

#define S_AMX \
	S_TILE(0, 0, 4, 6); S_TILE(1, 1, 5, 7); S_TILE(2, 2, 4, 6); S_TILE(3, 3, 5, 7); \
	S_STORE4(0); \
	S_TILE(4, 0, 4, 6); S_TILE(5, 1, 5, 7); S_TILE(6, 2, 4, 6); S_TILE(7, 3, 5, 7); \
	S_STORE4(4)

#define S_VROWS S_VROW(0); S_VROW(1); S_VROW(2); S_VROW(3); S_VROW(4); S_VROW(5); S_VROW(6); S_VROW(7)

// S_EPIPREP: d·sc of the sub-blocks (Z16-Z23), dmin (Z28), the mins
// pairs' words (Z24-Z27).
#define S_EPIPREP \
	VCVTPH2PS (SI), Z31; \
	S_SCALE(0, Z16); S_SCALE(1, Z17); S_SCALE(2, Z18); S_SCALE(3, Z19); \
	S_SCALE(4, Z20); S_SCALE(5, Z21); S_SCALE(6, Z22); S_SCALE(7, Z23); \
	VCVTPH2PS 32(SI), Z28; \
	VPMOVZXBW 192(SI), Z24; VPMOVZXBW 224(SI), Z25; VPMOVZXBW 256(SI), Z26; VPMOVZXBW 288(SI), Z27

#define S_NOCONSTS

// func r16sKernel(a *shortArgs)
TEXT ·r16sKernel(SB), NOSPLIT, $0-8
	S_TEXT(S_NOCONSTS, S_PREP, S_AMX, S_VROWS, S_EPIPREP, S_EPI, 2368, 288)

// r16s6Kernel is r16sKernel for the interleaved Q6_K layout (q6kr16.go),
// activations laid out by PrepareQ6KR16: each sub-block's four k-quads of
// 6-bit quants are built once (from its nibbles and top bits) into the
// rows of a 4 × 64-byte B tile, and each of the sixteen sub-blocks is one
// TDPBSUD of K = 16. A token's sub-block sum, less 32 × its activations'
// sum, is converted and folded in by one FMA with d·sc (signed; the
// sixteen vectors in sbuf), then f += dx·p. Z0-Z15 the tokens' sums, Z24
// a k-quad, Z25 a temporary, Z27 d, Z28 0x30 bytes, Z29 0x0f bytes, Z30 p,
// Z31 a temporary; cbuf holds sixteen C tiles (16 KiB).

#define T6_N0(s) (288+192*(s))(SI)
#define T6_N1(s) (288+192*(s)+64)(SI)
#define T6_TOP(s) (288+192*(s)+128)(SI)

// T6_KQ builds k-quad j of sub-block s into Z24 and stores it as row j of
// bbuf's tile s.
#define T6_KQ0(s) \
	VPANDD T6_N0(s), Z29, Z24; VPSLLW $4, T6_TOP(s), Z25; VPTERNLOGD $0xf8, Z28, Z25, Z24; \
	VMOVDQU64 Z24, ((s)*256)(R10)
#define T6_KQ1(s) \
	VPSRLW $4, T6_N0(s), Z24; VPANDD Z29, Z24, Z24; VPSLLW $2, T6_TOP(s), Z25; VPTERNLOGD $0xf8, Z28, Z25, Z24; \
	VMOVDQU64 Z24, ((s)*256+64)(R10)
#define T6_KQ2(s) \
	VPANDD T6_N1(s), Z29, Z24; VPTERNLOGD $0xf8, T6_TOP(s), Z28, Z24; \
	VMOVDQU64 Z24, ((s)*256+128)(R10)
#define T6_KQ3(s) \
	VPSRLW $4, T6_N1(s), Z24; VPANDD Z29, Z24, Z24; VPSRLW $2, T6_TOP(s), Z25; VPTERNLOGD $0xf8, Z28, Z25, Z24; \
	VMOVDQU64 Z24, ((s)*256+192)(R10)

// T6_SUB builds sub-block s's B tile and its d·sc (into sbuf, at BX).
#define T6_SUB(s) \
	T6_KQ0(s); T6_KQ1(s); T6_KQ2(s); T6_KQ3(s); \
	VPMOVSXBD (32+16*(s))(SI), Z25; VCVTDQ2PS Z25, Z25; VMULPS Z27, Z25, Z25; \
	VMOVUPS Z25, (64*(s))(BX)

// T6_TILE is Q6_K sub-block s: 16 activations, bbuf's tile s of 4 rows.
#define T6_TILE(s, c, a, b) G_TILE((16*(s)), ((s)*256), c, a, b)

#define T6_TILES4(s0) \
	T6_TILE(s0, 0, 4, 6); T6_TILE(s0+1, 1, 5, 7); T6_TILE(s0+2, 2, 4, 6); T6_TILE(s0+3, 3, 5, 7); \
	S_STORE4(s0)

// T6_VROW is the twin's C row of sub-block s for the token at AX, stored
// at BX + 1024s.
#define T6_VROW(s) \
	VPXORD Z31, Z31, Z31; \
	VMOVDQU64 ((s)*256)(R10), Z30; VPDPBUSD.BCST (16*(s))(AX), Z30, Z31; \
	VMOVDQU64 ((s)*256+64)(R10), Z30; VPDPBUSD.BCST (16*(s)+4)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*256+128)(R10), Z30; VPDPBUSD.BCST (16*(s)+8)(AX), Z30, Z31; \
	VMOVDQU64 ((s)*256+192)(R10), Z30; VPDPBUSD.BCST (16*(s)+12)(AX), Z30, Z31; \
	VMOVDQU64 Z31, ((s)*1024)(BX)

// T6_ACC folds sub-block s of the token at AX (its C row in cbuf + 64t)
// into Z30, with d·sc from sbuf (at BX).
#define T6_ACC(s, t) \
	VMOVDQU32    ((s)*1024+64*(t))(R11), Z31; \
	VPSUBD.BCST  (256+4*(s))(AX), Z31, Z31; \
	VCVTDQ2PS    Z31, Z31; \
	VFMADD231PS  (64*(s))(BX), Z31, Z30

#define T6_EPI(t, f, end) \
	CMPQ SA_N(DI), $(t+1); JLT end; \
	VPXORD Z30, Z30, Z30; \
	T6_ACC(0, t); T6_ACC(1, t); T6_ACC(2, t); T6_ACC(3, t); \
	T6_ACC(4, t); T6_ACC(5, t); T6_ACC(6, t); T6_ACC(7, t); \
	T6_ACC(8, t); T6_ACC(9, t); T6_ACC(10, t); T6_ACC(11, t); \
	T6_ACC(12, t); T6_ACC(13, t); T6_ACC(14, t); T6_ACC(15, t); \
	VFMADD231PS.BCST 320(AX), Z30, f; \
	ADDQ R9, AX

#define T6_CONSTS MOVL $0x30303030, AX; VPBROADCASTD AX, Z28

#define T6_PREP \
	VCVTPH2PS (SI), Z27; \
	MOVQ SA_SBUF(DI), BX; \
	T6_SUB(0); T6_SUB(1); T6_SUB(2); T6_SUB(3); T6_SUB(4); T6_SUB(5); T6_SUB(6); T6_SUB(7); \
	T6_SUB(8); T6_SUB(9); T6_SUB(10); T6_SUB(11); T6_SUB(12); T6_SUB(13); T6_SUB(14); T6_SUB(15)

#define T6_AMX T6_TILES4(0); T6_TILES4(4); T6_TILES4(8); T6_TILES4(12)

#define T6_VROWS \
	T6_VROW(0); T6_VROW(1); T6_VROW(2); T6_VROW(3); T6_VROW(4); T6_VROW(5); T6_VROW(6); T6_VROW(7); \
	T6_VROW(8); T6_VROW(9); T6_VROW(10); T6_VROW(11); T6_VROW(12); T6_VROW(13); T6_VROW(14); T6_VROW(15)

#define T6_EPIPREP MOVQ SA_SBUF(DI), BX

// func r16s6Kernel(a *shortArgs)
TEXT ·r16s6Kernel(SB), NOSPLIT, $0-8
	S_TEXT(T6_CONSTS, T6_PREP, T6_AMX, T6_VROWS, T6_EPIPREP, T6_EPI, 3360, 336)

// r16swKernel is r16sKernel over a.tiles whole tiles of 16 tokens (tile j's
// activations 16j·xstride past x) with each super-block unpacked once for
// all of them: the tokens' float sums accumulate in dst (zeroed first), a
// token's float operations those of r16sKernel (f starts at 0, then one
// FMA by dx a super-block), so its results are the same bits. Without
// FLAG_AMX its C rows come from VPDPBUSDs, as r16sKernel's twin.
// Registers as r16sKernel's but Z0 a token's sums in flight, BX the
// token's dst, AX its activations.
#define SA_TILES 104
#define SA_SAVE0 112
#define SA_SAVE1 120
#define SA_SAVE2 128

// W_EPI is token t's super-block into its sums at BX (in memory), then
// AX and BX step to the next token.
#define W_EPI(t) \
	S_P(t); \
	VMOVUPS      (BX), Z0; \
	VFMADD231PS.BCST 272(AX), Z30, Z0; \
	VMOVUPS      Z0, (BX); \
	ADDQ R9, AX; \
	ADDQ SA_LDD(DI), BX

// W_ZERO zeroes token t's sums at BX and steps BX.
#define W_ZERO VMOVUPS Z0, (BX); ADDQ SA_LDD(DI), BX

// func r16swKernel(a *shortArgs)
TEXT ·r16swKernel(SB), NOSPLIT, $0-8
	S_PROLOGUE
	TESTQ R13, R13
	JZ    donew
	CMPQ  SA_NB(DI), $0
	JEQ   donew
	CMPQ  SA_TILES(DI), $0
	JEQ   donew
	TESTQ $FLAG_AMX, SA_FLAGS(DI)
	JZ    groupw
	MOVQ  SA_CFG(DI), AX
	LDTILECFG(AMX_AX)

groupw:
	// Zero the group's sums of every token.
	VPXORD Z0, Z0, Z0
	MOVQ DX, BX
	MOVQ SA_TILES(DI), AX
	SHLQ $4, AX

zerow:
	W_ZERO
	DECQ AX
	JNZ  zerow
	MOVQ SA_X(DI), R8
	MOVQ SA_NB(DI), R12

blockw:
	S_PREP
	S_EPIPREP
	// Tile by tile, R8 at the tile's activations of this super-block; the
	// super-block's base, the tile's first sums and the tiles left are
	// kept in the argument block (S_TILE takes AX and BX).
	MOVQ R8, SA_SAVE0(DI)
	MOVQ DX, SA_SAVE1(DI)
	MOVQ SA_TILES(DI), AX
	MOVQ AX, SA_SAVE2(DI)

tilew:
	TESTQ $FLAG_AMX, SA_FLAGS(DI)
	JZ    vnniw
	S_AMX
	JMP epiw

vnniw:
	// The twin: the tile's 16 C rows by VPDPBUSDs (CX counts them).
	MOVQ R8, AX
	MOVQ R11, BX
	MOVQ $16, CX

vtokenw:
	S_VROWS
	ADDQ R9, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  vtokenw
	MOVQ $64, CX

epiw:
	MOVQ R8, AX
	MOVQ SA_SAVE1(DI), BX
	W_EPI(0); W_EPI(1); W_EPI(2); W_EPI(3); W_EPI(4); W_EPI(5); W_EPI(6); W_EPI(7)
	W_EPI(8); W_EPI(9); W_EPI(10); W_EPI(11); W_EPI(12); W_EPI(13); W_EPI(14); W_EPI(15)
	MOVQ AX, R8
	MOVQ BX, SA_SAVE1(DI)
	DECQ SA_SAVE2(DI)
	JNZ  tilew
	MOVQ SA_SAVE0(DI), R8
	ADDQ $2368, SI
	ADDQ $288, R8
	DECQ R12
	JNZ  blockw
	ADDQ $64, DX
	DECQ R13
	JNZ  groupw
	TESTQ $FLAG_AMX, SA_FLAGS(DI)
	JZ    donew
	TILERELEASE

donew:
	VZEROUPPER
	RET

// The pipelined short-step kernels (r16spKernel, r16sp6Kernel): r16sKernel
// and r16s6Kernel with each super-block's three phases taken from three
// super-blocks at once. In r16sKernel a super-block's B tiles are stored,
// then loaded by TILELOADD, its C tiles stored, then loaded by the
// epilogue, each through memory and in program order, so every phase
// waits for the one before to retire (a tile load does not forward from
// the store buffer). Here one iteration unpacks super-block s+1, runs the
// tile products of s (its B tiles stored an iteration ago) and the
// epilogue of s−1 (its C tiles stored an iteration ago), so the vector
// work of two super-blocks overlaps the tile unit's. Buffers alternate by
// the parity of the super-blocks left (R12): two B slots, two C slots and
// (Q6_K's d·sc, written by the unpacking and read by the epilogue two
// super-blocks later) four scale slots, all in the argument block. Each
// token's float operations are r16sKernel's in the same order, so its
// results are the same bits.

#define SA_BSLOT 136
#define SA_CSLOT 152
#define SA_SSLOT 168

// P_SLOT2 loads slot (reg + off) & 1 of the two at field into dst;
// P_SLOT4 slot (reg + off) & 3 of four. Clobbers AX.
#define P_SLOT2(reg, off, field, dst) LEAQ off(reg), AX; ANDQ $1, AX; MOVQ field(DI)(AX*8), dst
#define P_SLOT4(reg, off, field, dst) LEAQ off(reg), AX; ANDQ $3, AX; MOVQ field(DI)(AX*8), dst

// P_TEXT is the pipelined kernels' text: consts, prep (unpacks the
// super-block at SI into the B slot at R10; Q6_K's d·sc into the scale
// slot at BX), amx and vrows as S_TEXT's, epiprep (the epilogue's
// constants of the super-block at SI; Q6_K's scale slot in BX), epi,
// wstep and xstep as S_TEXT's; sslot, when set, loads the scale slot of
// the super-block R12 + off into BX.
#define P_TEXT(consts, prep, amx, vrows, epiprep, epi, wstep, xstep, sslot) \
	S_START(consts); \
group: \
	S_ZERO16; \
	MOVQ SA_X(DI), R8; MOVQ SA_NB(DI), R12; \
	P_SLOT2(R12, 0, SA_BSLOT, R10); sslot(0); \
	prep; \
block: \
	CMPQ R12, $1; JEQ products; \
	P_SLOT2(R12, -1, SA_BSLOT, R10); sslot(-1); \
	ADDQ $wstep, SI; prep; SUBQ $wstep, SI; \
products: \
	P_SLOT2(R12, 0, SA_BSLOT, R10); P_SLOT2(R12, 0, SA_CSLOT, R11); \
	S_PRODUCTS(amx, vrows); \
epilogue: \
	CMPQ R12, SA_NB(DI); JEQ epidone; \
	P_SLOT2(R12, 1, SA_CSLOT, R11); sslot(1); \
	SUBQ $wstep, SI; epiprep; ADDQ $wstep, SI; \
	MOVQ R8, AX; SUBQ $xstep, AX; \
	S_EPI16(epi, epidone); \
epidone: \
	ADDQ $wstep, SI; ADDQ $xstep, R8; \
	DECQ R12; JNZ block; \
	P_SLOT2(R12, 1, SA_CSLOT, R11); sslot(1); \
	SUBQ $wstep, SI; epiprep; ADDQ $wstep, SI; \
	MOVQ R8, AX; SUBQ $xstep, AX; \
	S_EPI16(epi, lastdone); \
lastdone: \
	S_GROUP_END

#define P_NOSLOT(off)
#define P6_SLOT(off) P_SLOT4(R12, off, SA_SSLOT, BX)

// T6_PREPP is T6_PREP with the scale slot already in BX.
#define T6_PREPP \
	VCVTPH2PS (SI), Z27; \
	T6_SUB(0); T6_SUB(1); T6_SUB(2); T6_SUB(3); T6_SUB(4); T6_SUB(5); T6_SUB(6); T6_SUB(7); \
	T6_SUB(8); T6_SUB(9); T6_SUB(10); T6_SUB(11); T6_SUB(12); T6_SUB(13); T6_SUB(14); T6_SUB(15)

#define T6_NOEPIPREP

// func r16spKernel(a *shortArgs)
TEXT ·r16spKernel(SB), NOSPLIT, $0-8
	P_TEXT(S_NOCONSTS, S_PREP, S_AMX, S_VROWS, S_EPIPREP, S_EPI, 2368, 288, P_NOSLOT)

// func r16sp6Kernel(a *shortArgs)
TEXT ·r16sp6Kernel(SB), NOSPLIT, $0-8
	P_TEXT(T6_CONSTS, T6_PREPP, T6_AMX, T6_VROWS, T6_NOEPIPREP, T6_EPI, 3360, 336, P6_SLOT)
