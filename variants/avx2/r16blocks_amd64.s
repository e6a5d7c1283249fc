//go:build !noasm

#include "textflag.h"
#include "r16_amd64.h"

// The interleaved Q4_0 decode kernel (q40r16.go): per block of 32 values
// and group of 16 rows, four lines, each two 256-bit halves (rows 0-7,
// 8-15) split into nibbles and multiplied (VPMADDUBSW, the nibbles q
// unsigned) by the broadcast activation dwords of its low and high
// values, the eight products of a half added in words (≤ 8 × 3840, exact),
// widened by VPMADDWD by ones, less 8·Σx (q = w + 8), times d_w·d_x into
// the rows' float sums. Y15 holds 0x0f bytes, Y0 and Y1 the float sums.

// Q4R_PART is half off of line j: its low nibbles times Y8, its high ones
// times Y9, added into a.
#define Q4R_PART(j, off, a, b) \
	VPAND      (32+64*(j)+off)(SI), Y15, a; \
	VPANDN     (32+64*(j)+off)(SI), Y15, b; \
	VPSRLW     $4, b, b; \
	VPMADDUBSW Y8, a, a; \
	VPMADDUBSW Y9, b, b; \
	VPADDW     b, a, a

#define Q4R_BCAST(j) \
	VPBROADCASTD (4*(j))(R8), Y8; \
	VPBROADCASTD (16+4*(j))(R8), Y9

// Q4R_LINE adds line j of both halves into the word sums Y2 (rows 0-7)
// and Y3; Q4R_FIRST starts them.
#define Q4R_FIRST \
	Q4R_BCAST(0); \
	Q4R_PART(0, 0, Y2, Y10); \
	Q4R_PART(0, 32, Y3, Y11)

#define Q4R_LINE(j) \
	Q4R_BCAST(j); \
	Q4R_PART(j, 0, Y4, Y10); \
	Q4R_PART(j, 32, Y5, Y11); \
	VPADDW Y4, Y2, Y2; \
	VPADDW Y5, Y3, Y3

// Q4R_BLOCK is one block of the group at SI (activations at R8) into Y0,
// Y1; SI, R11 and R8 step to the next. PFW prefetches (see below).
#define Q4R_BLOCK(pf) \
	pf; \
	Q4R_FIRST; Q4R_LINE(1); Q4R_LINE(2); Q4R_LINE(3); \
	VPMADDWD     Y14, Y2, Y2; \
	VPMADDWD     Y14, Y3, Y3; \
	VPBROADCASTD 32(R8), Y6; \
	VPSUBD       Y6, Y2, Y2; \
	VPSUBD       Y6, Y3, Y3; \
	R2_DSCALE(36, Y7, Y4, Y5); \
	ADDQ $288, SI; ADDQ $288, R11; \
	ADDQ $40, R8

#define Q4R_NOPF
#define Q4R_PF \
	PFW 0(R11); PFW 64(R11); PFW 128(R11); PFW 192(R11); PFW 256(R11)

// Q4R_FUNC: the arguments (R2_ARGS), Y14 words of 1, the loops.
#define Q4R_FUNC \
	R2_ARGS; \
	MOVL $0x00010001, AX; VMOVD AX, X14; VPBROADCASTD X14, Y14; \
	R2_LOOPS(Q4R_BLOCK(Q4R_NOPF), Q4R_BLOCK(Q4R_PF))

#define PFW PREFETCHT0

// func q40r16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q40r16DotAVX2(SB), NOSPLIT, $0-48
	Q4R_FUNC

#undef PFW
#define PFW PREFETCHNTA

// func q40r16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)
// q40r16DotAVX2 prefetching with PREFETCHNTA.
TEXT ·q40r16DotAVX2N(SB), NOSPLIT, $0-48
	Q4R_FUNC

#undef PFW

// The interleaved Q8_0 kernel (r16blocks.go): per block and group, eight
// lines, each two halves of 8 rows against the broadcast activation dword
// of its four values: |w| (VPSIGNB w, w) times x·sign(w) by VPMADDUBSW
// (ggml's AVX2 Q8_0 trick; pairs ≤ 32512, exact), widened by VPMADDWD by
// ones into int32 sums Y2 (rows 0-7), Y3, then d_w·d_x by one FMA a
// block and 8 rows.

// Q8R_HALF is half off of line j against Y8 into the int32 sums acc
// (add: VPADDD into acc; the first line moves).
#define Q8R_HALF(j, off, w, t) \
	VMOVDQU    (32+64*(j)+off)(SI), w; \
	VPSIGNB    w, Y8, t; \
	VPSIGNB    w, w, w; \
	VPMADDUBSW t, w, w; \
	VPMADDWD   Y14, w, w

#define Q8R_FIRST \
	VPBROADCASTD (R8), Y8; \
	Q8R_HALF(0, 0, Y2, Y6); \
	Q8R_HALF(0, 32, Y3, Y7)

#define Q8R_LINE(j) \
	VPBROADCASTD (4*(j))(R8), Y8; \
	Q8R_HALF(j, 0, Y4, Y6); \
	Q8R_HALF(j, 32, Y5, Y7); \
	VPADDD Y4, Y2, Y2; \
	VPADDD Y5, Y3, Y3

#define Q8R_BLOCK(pf) \
	pf; \
	Q8R_FIRST; Q8R_LINE(1); Q8R_LINE(2); Q8R_LINE(3); \
	Q8R_LINE(4); Q8R_LINE(5); Q8R_LINE(6); Q8R_LINE(7); \
	R2_DSCALE(36, Y7, Y4, Y5); \
	ADDQ $544, SI; ADDQ $544, R11; \
	ADDQ $40, R8

#define Q8R_NOPF
#define Q8R_PF \
	PFW 0(R11); PFW 64(R11); PFW 128(R11); PFW 192(R11); PFW 256(R11); \
	PFW 320(R11); PFW 384(R11); PFW 448(R11); PFW 512(R11)

#define Q8R_FUNC \
	R2_ARGS; \
	MOVL $0x00010001, AX; VMOVD AX, X14; VPBROADCASTD X14, Y14; \
	R2_LOOPS(Q8R_BLOCK(Q8R_NOPF), Q8R_BLOCK(Q8R_PF))

#define PFW PREFETCHT0

// func q80r16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q80r16DotAVX2(SB), NOSPLIT, $0-48
	Q8R_FUNC

#undef PFW
#define PFW PREFETCHNTA

// func q80r16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q80r16DotAVX2N(SB), NOSPLIT, $0-48
	Q8R_FUNC

#undef PFW

// func packGemm2Q40R16Asm(panel, grp *byte, h, nb int)
// packGemm2Q40R16 in assembly: per block, half h of each of the four
// lines gives k-quad j (low nibbles) and 4+j (high) of 8 rows, then the 8
// rows' d_w widened to float32 (VCVTPH2PS, exact), 288 bytes a block.
TEXT ·packGemm2Q40R16Asm(SB), NOSPLIT, $0-32
	MOVQ panel+0(FP), DI
	MOVQ grp+8(FP), SI
	MOVQ h+16(FP), AX
	MOVQ nb+24(FP), CX
	MOVQ AX, DX
	SHLQ $5, AX         // 32h: the half's bytes in a line
	SHLQ $4, DX         // 16h: its rows' d in the group's 32
	ADDQ SI, AX
	ADDQ SI, DX
	MOVL $0x0f0f0f0f, BX
	MOVQ BX, X15
	VPBROADCASTD X15, Y15
	TESTQ CX, CX
	JZ    pack2done

pack2:
	VMOVDQU   32(AX), Y0
	VMOVDQU   96(AX), Y1
	VMOVDQU   160(AX), Y2
	VMOVDQU   224(AX), Y3
	VPSRLW    $4, Y0, Y4
	VPSRLW    $4, Y1, Y5
	VPSRLW    $4, Y2, Y6
	VPSRLW    $4, Y3, Y7
	VPAND     Y15, Y0, Y0
	VPAND     Y15, Y1, Y1
	VPAND     Y15, Y2, Y2
	VPAND     Y15, Y3, Y3
	VPAND     Y15, Y4, Y4
	VPAND     Y15, Y5, Y5
	VPAND     Y15, Y6, Y6
	VPAND     Y15, Y7, Y7
	VCVTPH2PS (DX), Y8
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	VMOVDQU   Y4, 128(DI)
	VMOVDQU   Y5, 160(DI)
	VMOVDQU   Y6, 192(DI)
	VMOVDQU   Y7, 224(DI)
	VMOVUPS   Y8, 256(DI)
	ADDQ      $288, AX
	ADDQ      $288, DX
	ADDQ      $288, DI
	DECQ      CX
	JNZ       pack2

pack2done:
	VZEROUPPER
	RET
