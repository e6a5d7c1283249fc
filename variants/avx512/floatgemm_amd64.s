//go:build !noasm

#include "textflag.h"
#include "macros_amd64.h"

// The F16 and BF16 GEMM tile (floatgemm_amd64.go): 6 weight rows × 4
// tokens in 24 ZMM accumulators (Z8-Z31, token t row r in Z(8+6t+r)), k in
// steps of 16 values. Each step widens the 6 rows' 16 values (Z0-Z5)
// once and each token's (Z6) once, then 24 FMAs; at the end each
// accumulator's 16 lanes are summed into out[6t+r]. Row and token
// pointers come from the arguments (floatTile), so a tail repeats a
// valid one and its sums are dropped. A variant defines LOADW (a row's
// step into a register), TOKS (the 4 tokens' steps into the accumulators)
// and STEP (the bytes of a step); bf16TileDot takes 32 values a step by
// VDPBF16PS (BYTE-encoded: DPBF16) on the bf16 values as they stand.

// DPBF16 is VDPBF16PS Z(d), Z(s1), Z(s2) (register numbers): Z(d) += the
// pairwise bf16 products of Z(s1) and Z(s2), as EVEX.512.F3.0F38.W0 52 /r.
#define DPBF16(d, s1, s2) \
	BYTE $0x62; \
	BYTE $(((1-(((d)>>3)&1))<<7) | ((1-(((s2)>>4)&1))<<6) | ((1-(((s2)>>3)&1))<<5) | ((1-(((d)>>4)&1))<<4) | 2); \
	BYTE $(((15-((s1)&15))<<3) | 6); \
	BYTE $(0x40 | ((1-(((s1)>>4)&1))<<3)); \
	BYTE $0x52; \
	BYTE $(0xc0 | (((d)&7)<<3) | ((s2)&7))

// DT_TOK adds token (m)'s 32 values times the 6 rows' into Z(a0)..Z(a5).
#define DT_TOK(m, a0, a1, a2, a3, a4, a5) \
	VMOVDQU16 m, Z6; \
	DPBF16(a0, 6, 0); \
	DPBF16(a1, 6, 1); \
	DPBF16(a2, 6, 2); \
	DPBF16(a3, 6, 3); \
	DPBF16(a4, 6, 4); \
	DPBF16(a5, 6, 5)

// FT_TOKS and DT_TOKS are TOKS for the widening and the dot variants.
#define FT_TOKS \
	FT_TOK((R12)(AX*1), Z8, Z9, Z10, Z11, Z12, Z13); \
	FT_TOK((R13)(AX*1), Z14, Z15, Z16, Z17, Z18, Z19); \
	FT_TOK((BX)(AX*1), Z20, Z21, Z22, Z23, Z24, Z25); \
	FT_TOK((DX)(AX*1), Z26, Z27, Z28, Z29, Z30, Z31)

#define DT_TOKS \
	DT_TOK((R12)(AX*1), 8, 9, 10, 11, 12, 13); \
	DT_TOK((R13)(AX*1), 14, 15, 16, 17, 18, 19); \
	DT_TOK((BX)(AX*1), 20, 21, 22, 23, 24, 25); \
	DT_TOK((DX)(AX*1), 26, 27, 28, 29, 30, 31)

// FT_TOK adds token (m)'s step times the 6 rows into a0..a5.
#define FT_TOK(m, a0, a1, a2, a3, a4, a5) \
	WIDEN(m, Z6); \
	VFMADD231PS Z0, Z6, a0; \
	VFMADD231PS Z1, Z6, a1; \
	VFMADD231PS Z2, Z6, a2; \
	VFMADD231PS Z3, Z6, a3; \
	VFMADD231PS Z4, Z6, a4; \
	VFMADD231PS Z5, Z6, a5

// FT_HSUM stores the sum of z's lanes (y its low half) at off(AX).
#define FT_HSUM(z, y, off) \
	VEXTRACTF64X4 $1, z, Y0; \
	VADDPS        y, Y0, Y0; \
	HSUM8(Y0, X0, X1); \
	VMOVSS        X0, off(AX)

#define FT_BODY \
	MOVQ a+0(FP), AX; \
	MOVQ 0(AX), SI; MOVQ 8(AX), DI; MOVQ 16(AX), R8; \
	MOVQ 24(AX), R9; MOVQ 32(AX), R10; MOVQ 40(AX), R11; \
	MOVQ 48(AX), R12; MOVQ 56(AX), R13; MOVQ 64(AX), BX; MOVQ 72(AX), DX; \
	MOVQ 88(AX), CX; \
	VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; VPXORD Z17, Z17, Z17; VPXORD Z18, Z18, Z18; VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; VPXORD Z21, Z21, Z21; VPXORD Z22, Z22, Z22; VPXORD Z23, Z23, Z23; \
	VPXORD Z24, Z24, Z24; VPXORD Z25, Z25, Z25; VPXORD Z26, Z26, Z26; VPXORD Z27, Z27, Z27; \
	VPXORD Z28, Z28, Z28; VPXORD Z29, Z29, Z29; VPXORD Z30, Z30, Z30; VPXORD Z31, Z31, Z31; \
	XORQ AX, AX; \
	TESTQ CX, CX; \
	JZ   sums; \
loop: \
	LOADW((SI)(AX*1), Z0); \
	LOADW((DI)(AX*1), Z1); \
	LOADW((R8)(AX*1), Z2); \
	LOADW((R9)(AX*1), Z3); \
	LOADW((R10)(AX*1), Z4); \
	LOADW((R11)(AX*1), Z5); \
	TOKS; \
	ADDQ $STEP, AX; \
	DECQ CX; \
	JNZ  loop; \
sums: \
	MOVQ a+0(FP), AX; \
	MOVQ 80(AX), AX; \
	FT_HSUM(Z8, Y8, 0); FT_HSUM(Z9, Y9, 4); FT_HSUM(Z10, Y10, 8); FT_HSUM(Z11, Y11, 12); \
	FT_HSUM(Z12, Y12, 16); FT_HSUM(Z13, Y13, 20); FT_HSUM(Z14, Y14, 24); FT_HSUM(Z15, Y15, 28); \
	FT_HSUM(Z16, Y16, 32); FT_HSUM(Z17, Y17, 36); FT_HSUM(Z18, Y18, 40); FT_HSUM(Z19, Y19, 44); \
	FT_HSUM(Z20, Y20, 48); FT_HSUM(Z21, Y21, 52); FT_HSUM(Z22, Y22, 56); FT_HSUM(Z23, Y23, 60); \
	FT_HSUM(Z24, Y24, 64); FT_HSUM(Z25, Y25, 68); FT_HSUM(Z26, Y26, 72); FT_HSUM(Z27, Y27, 76); \
	FT_HSUM(Z28, Y28, 80); FT_HSUM(Z29, Y29, 84); FT_HSUM(Z30, Y30, 88); FT_HSUM(Z31, Y31, 92); \
	VZEROUPPER; \
	RET

// func f16RowsX32(dst *float32, rows int, w *byte, x *float32, k int)
// (and f16RowsX32N: every weight line prefetched 8 KiB ahead, PREFETCHNTA)
// The F16 matvec over activations widened once (x, float32; k a multiple
// of 64): per 64 values of a row, 4 VCVTPH2PS of the weights and 4 FMAs
// with the activations from memory into 4 accumulators, then the row's
// lanes summed into dst[r].
#define X32_BODY(xrow, xloop, xdone) \
	MOVQ dst+0(FP), DX; \
	MOVQ rows+8(FP), R9; \
	MOVQ w+16(FP), SI; \
	MOVQ k+32(FP), R10; \
	SHRQ $6, R10; \
	TESTQ R9, R9; \
	JZ    xdone; \
	TESTQ R10, R10; \
	JZ    xdone; \
xrow: \
	MOVQ   x+24(FP), DI; \
	MOVQ   R10, CX; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
xloop: \
	XPF; \
	VCVTPH2PS   (SI), Z4; \
	VCVTPH2PS   32(SI), Z5; \
	VCVTPH2PS   64(SI), Z6; \
	VCVTPH2PS   96(SI), Z7; \
	VFMADD231PS (DI), Z4, Z0; \
	VFMADD231PS 64(DI), Z5, Z1; \
	VFMADD231PS 128(DI), Z6, Z2; \
	VFMADD231PS 192(DI), Z7, Z3; \
	ADDQ        $128, SI; \
	ADDQ        $256, DI; \
	DECQ        CX; \
	JNZ         xloop; \
	VADDPS        Z1, Z0, Z0; \
	VADDPS        Z3, Z2, Z2; \
	VADDPS        Z2, Z0, Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS        Y1, Y0, Y0; \
	HSUM8(Y0, X0, X1); \
	VMOVSS        X0, (DX); \
	ADDQ          $4, DX; \
	DECQ          R9; \
	JNZ           xrow; \
xdone: \
	VZEROUPPER; \
	RET

#define WIDEN(m, z) VCVTPH2PS m, z
#define LOADW WIDEN
#define TOKS FT_TOKS
#define STEP 32

// func f16Tile(a *floatTile)
TEXT ·f16Tile(SB), NOSPLIT, $0-8
	FT_BODY

#undef WIDEN
#define WIDEN(m, z) VPMOVZXWD m, z; VPSLLD $16, z, z

// func bf16Tile(a *floatTile)
TEXT ·bf16Tile(SB), NOSPLIT, $0-8
	FT_BODY

#undef WIDEN
#undef LOADW
#undef TOKS
#undef STEP
#define LOADW(m, z) VMOVDQU16 m, z
#define TOKS DT_TOKS
#define STEP 64

// func bf16TileDot(a *floatTile)
// The tile by VDPBF16PS: steps of 32 values, the rows and tokens loaded
// as they stand (bf16 pairs), 24 VDPBF16PS a step.
TEXT ·bf16TileDot(SB), NOSPLIT, $0-8
	FT_BODY

#undef LOADW
#undef TOKS
#undef STEP

#define XPF
TEXT ·f16RowsX32(SB), NOSPLIT, $0-40
	X32_BODY(xrow, xloop, xdone)
#undef XPF

#define XPF PREFETCHNTA 8192(SI); PREFETCHNTA 8256(SI)
TEXT ·f16RowsX32N(SB), NOSPLIT, $0-40
	X32_BODY(nrow, nloop, ndone)
#undef XPF
