//go:build !noasm

#include "textflag.h"

// The sub-block-sum GEMM in 256-bit AVX2 (matmul/q4_k, q5_k and q6_k:
// avx2-sub; subavx2_amd64.go), for CPUs without AVX-512, over the panels
// and activation packs of avx512-vnni-sub (sub.go) and with its exact
// integer sums and float steps. Per k-quad and token VPMADDUBSW of the raw
// unsigned quants against the token's signed Q8_K activations gives word
// pair sums of at most 2·q·128 (q the largest quant: 15, 31, 63), added
// in words (VPADDW) over as many k-quads as stay below 2^15 (8, 4, 2); then
// VPMADDWD by ones into dwords, VPMULLD by the sub-block scale and into the
// super-block sum; the block-sum terms by VPMADDWD; then d·sum (less
// dmin·mins for Q4_K and Q5_K) times dx into the token's accumulator, in
// avx512-vnni-sub's order. 8 rows (one half of a 16-row panel) × 4 tokens
// a call: Y0-Y3 word sums, Y4-Y7 super-block sums, Y8-Y11 float
// accumulators, Y12 weights, Y13-Y14 scratch, Y15 ones (words).
//
// subAVX2Args: w 0 (the panel's super-block 0, at the half's 32-byte
// offset), x 8 (the token block's activation pack, super-block 0), out 16
// (4 tokens × 8 floats), nsb 24, tok0 32 (the first of the 4 tokens within
// the block of 12).

// SUBAVX2_QUAD(w, x0): one k-quad of the 8 rows (w(SI)) times the four
// tokens' activation dwords (x0(R8), 64 bytes apart), added in words into
// Y0-Y3.
#define SUBAVX2_QUAD(w, x0) \
	VMOVDQU w(SI), Y12; \
	VPBROADCASTD x0(R8), Y13; \
	VPMADDUBSW Y13, Y12, Y14; \
	VPADDW Y14, Y0, Y0; \
	VPBROADCASTD (x0+64)(R8), Y13; \
	VPMADDUBSW Y13, Y12, Y14; \
	VPADDW Y14, Y1, Y1; \
	VPBROADCASTD (x0+128)(R8), Y13; \
	VPMADDUBSW Y13, Y12, Y14; \
	VPADDW Y14, Y2, Y2; \
	VPBROADCASTD (x0+192)(R8), Y13; \
	VPMADDUBSW Y13, Y12, Y14; \
	VPADDW Y14, Y3, Y3

// SUBAVX2_FLUSH(sc): the four tokens' word sums as dwords (VPMADDWD by
// ones) times the sub-block scales at sc(SI), into Y4-Y7; Y0-Y3 zeroed.
#define SUBAVX2_FLUSH(sc) \
	VPMADDWD Y15, Y0, Y0; \
	VPMULLD sc(SI), Y0, Y0; \
	VPADDD Y0, Y4, Y4; \
	VPMADDWD Y15, Y1, Y1; \
	VPMULLD sc(SI), Y1, Y1; \
	VPADDD Y1, Y5, Y5; \
	VPMADDWD Y15, Y2, Y2; \
	VPMULLD sc(SI), Y2, Y2; \
	VPADDD Y2, Y6, Y6; \
	VPMADDWD Y15, Y3, Y3; \
	VPMULLD sc(SI), Y3, Y3; \
	VPADDD Y3, Y7, Y7; \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3

// SUBAVX2_BSUM(coef, b, y): the coefficient word pairs at coef(SI) times
// the block-sum word pair at b(R10), added into y.
#define SUBAVX2_BSUM(coef, b, y) \
	VPBROADCASTD b(R10), Y13; \
	VPMADDWD coef(SI), Y13, Y14; \
	VPADDD Y14, y, y

// SUBAVX2_DX(t, y, f): f += y times token t's dx (R9).
#define SUBAVX2_DX(t, y, f) \
	VBROADCASTSS (4*t)(R9), Y14; \
	VFMADD231PS Y14, y, f

// SUBAVX2_SUB8(wb, xb, sc): a Q4_K sub-block (8 k-quads from wb(SI), the
// tokens' activations from xb(R8)), its words summed over all 8.
#define SUBAVX2_SUB8(wb, xb, sc) \
	SUBAVX2_QUAD((wb+0), (xb+0)); \
	SUBAVX2_QUAD((wb+64), (xb+4)); \
	SUBAVX2_QUAD((wb+128), (xb+8)); \
	SUBAVX2_QUAD((wb+192), (xb+12)); \
	SUBAVX2_QUAD((wb+256), (xb+16)); \
	SUBAVX2_QUAD((wb+320), (xb+20)); \
	SUBAVX2_QUAD((wb+384), (xb+24)); \
	SUBAVX2_QUAD((wb+448), (xb+28)); \
	SUBAVX2_FLUSH(sc)

// SUBAVX2_SUB8F4(wb, xb, sc): a Q5_K sub-block, its words flushed every 4
// k-quads (quants up to 31).
#define SUBAVX2_SUB8F4(wb, xb, sc) \
	SUBAVX2_QUAD((wb+0), (xb+0)); \
	SUBAVX2_QUAD((wb+64), (xb+4)); \
	SUBAVX2_QUAD((wb+128), (xb+8)); \
	SUBAVX2_QUAD((wb+192), (xb+12)); \
	SUBAVX2_FLUSH(sc); \
	SUBAVX2_QUAD((wb+256), (xb+16)); \
	SUBAVX2_QUAD((wb+320), (xb+20)); \
	SUBAVX2_QUAD((wb+384), (xb+24)); \
	SUBAVX2_QUAD((wb+448), (xb+28)); \
	SUBAVX2_FLUSH(sc)

// SUBAVX2_SUB4F2(wb, xb, sc): a Q6_K sub-block (4 k-quads), its words
// flushed every 2 (quants up to 63).
#define SUBAVX2_SUB4F2(wb, xb, sc) \
	SUBAVX2_QUAD(wb, xb); \
	SUBAVX2_QUAD((wb+64), (xb+4)); \
	SUBAVX2_FLUSH(sc); \
	SUBAVX2_QUAD((wb+128), (xb+8)); \
	SUBAVX2_QUAD((wb+192), (xb+12)); \
	SUBAVX2_FLUSH(sc)

// SUBAVX2_ARGS loads subAVX2Args: SI panel, CX super-blocks, R8 the
// quants of token tok0, R9 its dx, R10 its block sums; Y15 ones (words);
// Y0-Y11 zeroed.
#define SUBAVX2_ARGS \
	MOVQ a+0(FP), AX; \
	MOVQ 0(AX), SI; \
	MOVQ 8(AX), DI; \
	MOVQ 24(AX), CX; \
	MOVQ 32(AX), DX; \
	MOVQ DX, BX; \
	SHLQ $6, BX; \
	LEAQ (DI)(BX*1), R8; \
	LEAQ 3072(DI)(DX*4), R9; \
	MOVQ DX, BX; \
	SHLQ $5, BX; \
	LEAQ 3120(DI)(BX*1), R10; \
	MOVL $0x00010001, DX; \
	MOVQ DX, X15; \
	VPBROADCASTD X15, Y15; \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	VPXOR Y4, Y4, Y4; \
	VPXOR Y5, Y5, Y5; \
	VPXOR Y6, Y6, Y6; \
	VPXOR Y7, Y7, Y7; \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11

// SUBAVX2_NEXT(sb): the next super-block (sb panel bytes, 3520 of
// activations).
#define SUBAVX2_NEXT(sb) \
	ADDQ $sb, SI; \
	ADDQ $3520, R8; \
	ADDQ $3520, R9; \
	ADDQ $3520, R10

// SUBAVX2_STORE: the four tokens' accumulators Y8-Y11 to out.
#define SUBAVX2_STORE \
	MOVQ 16(AX), DX; \
	VMOVUPS Y8, 0(DX); \
	VMOVUPS Y9, 32(DX); \
	VMOVUPS Y10, 64(DX); \
	VMOVUPS Y11, 96(DX)

// SUBAVX2_EPI_K4(t, m, s, f): token t's Q4_K/Q5_K super-block epilogue:
// its mins m (Y0-Y3, zero) from the four coefficient pairs at 4608(SI),
// then f += dx·(d·float(s) − dmin·float(m)); m and s zeroed.
#define SUBAVX2_EPI_K4(t, m, s, f) \
	SUBAVX2_BSUM(4608, (0+32*t), m); \
	SUBAVX2_BSUM(4672, (4+32*t), m); \
	SUBAVX2_BSUM(4736, (8+32*t), m); \
	SUBAVX2_BSUM(4800, (12+32*t), m); \
	VCVTDQ2PS s, s; \
	VCVTDQ2PS m, m; \
	VMULPS 4864(SI), s, Y13; \
	VFNMADD231PS 4928(SI), m, Y13; \
	SUBAVX2_DX(t, Y13, f); \
	VPXOR m, m, m; \
	VPXOR s, s, s

// SUBAVX2_EPI_Q6K(t, s, f): token t's Q6_K super-block epilogue: the
// −32·sc block-sum terms (eight coefficient pairs at 5120(SI)) into s,
// then f += dx·d·float(s); s zeroed.
#define SUBAVX2_EPI_Q6K(t, s, f) \
	SUBAVX2_BSUM(5120, (0+32*t), s); \
	SUBAVX2_BSUM(5184, (4+32*t), s); \
	SUBAVX2_BSUM(5248, (8+32*t), s); \
	SUBAVX2_BSUM(5312, (12+32*t), s); \
	SUBAVX2_BSUM(5376, (16+32*t), s); \
	SUBAVX2_BSUM(5440, (20+32*t), s); \
	SUBAVX2_BSUM(5504, (24+32*t), s); \
	SUBAVX2_BSUM(5568, (28+32*t), s); \
	VCVTDQ2PS s, s; \
	VMULPS 5632(SI), s, Y13; \
	SUBAVX2_DX(t, Y13, f); \
	VPXOR s, s, s

// func subAVX2Q4K(a *subAVX2Args)
TEXT ·subAVX2Q4K(SB), NOSPLIT, $0-8
	SUBAVX2_ARGS
	TESTQ CX, CX
	JZ subAVX2Q4KStore
subAVX2Q4KSB:
	SUBAVX2_SUB8(0, 0, 4096)
	SUBAVX2_SUB8(512, 32, 4160)
	SUBAVX2_SUB8(1024, 768, 4224)
	SUBAVX2_SUB8(1536, 800, 4288)
	SUBAVX2_SUB8(2048, 1536, 4352)
	SUBAVX2_SUB8(2560, 1568, 4416)
	SUBAVX2_SUB8(3072, 2304, 4480)
	SUBAVX2_SUB8(3584, 2336, 4544)
	SUBAVX2_EPI_K4(0, Y0, Y4, Y8)
	SUBAVX2_EPI_K4(1, Y1, Y5, Y9)
	SUBAVX2_EPI_K4(2, Y2, Y6, Y10)
	SUBAVX2_EPI_K4(3, Y3, Y7, Y11)
	SUBAVX2_NEXT(4992)
	DECQ CX
	JNZ subAVX2Q4KSB
subAVX2Q4KStore:
	SUBAVX2_STORE
	VZEROUPPER
	RET

// func subAVX2Q5K(a *subAVX2Args)
TEXT ·subAVX2Q5K(SB), NOSPLIT, $0-8
	SUBAVX2_ARGS
	TESTQ CX, CX
	JZ subAVX2Q5KStore
subAVX2Q5KSB:
	SUBAVX2_SUB8F4(0, 0, 4096)
	SUBAVX2_SUB8F4(512, 32, 4160)
	SUBAVX2_SUB8F4(1024, 768, 4224)
	SUBAVX2_SUB8F4(1536, 800, 4288)
	SUBAVX2_SUB8F4(2048, 1536, 4352)
	SUBAVX2_SUB8F4(2560, 1568, 4416)
	SUBAVX2_SUB8F4(3072, 2304, 4480)
	SUBAVX2_SUB8F4(3584, 2336, 4544)
	SUBAVX2_EPI_K4(0, Y0, Y4, Y8)
	SUBAVX2_EPI_K4(1, Y1, Y5, Y9)
	SUBAVX2_EPI_K4(2, Y2, Y6, Y10)
	SUBAVX2_EPI_K4(3, Y3, Y7, Y11)
	SUBAVX2_NEXT(4992)
	DECQ CX
	JNZ subAVX2Q5KSB
subAVX2Q5KStore:
	SUBAVX2_STORE
	VZEROUPPER
	RET

// func subAVX2Q6K(a *subAVX2Args)
TEXT ·subAVX2Q6K(SB), NOSPLIT, $0-8
	SUBAVX2_ARGS
	TESTQ CX, CX
	JZ subAVX2Q6KStore
subAVX2Q6KSB:
	SUBAVX2_SUB4F2(0, 0, 4096)
	SUBAVX2_SUB4F2(256, 16, 4160)
	SUBAVX2_SUB4F2(512, 32, 4224)
	SUBAVX2_SUB4F2(768, 48, 4288)
	SUBAVX2_SUB4F2(1024, 768, 4352)
	SUBAVX2_SUB4F2(1280, 784, 4416)
	SUBAVX2_SUB4F2(1536, 800, 4480)
	SUBAVX2_SUB4F2(1792, 816, 4544)
	SUBAVX2_SUB4F2(2048, 1536, 4608)
	SUBAVX2_SUB4F2(2304, 1552, 4672)
	SUBAVX2_SUB4F2(2560, 1568, 4736)
	SUBAVX2_SUB4F2(2816, 1584, 4800)
	SUBAVX2_SUB4F2(3072, 2304, 4864)
	SUBAVX2_SUB4F2(3328, 2320, 4928)
	SUBAVX2_SUB4F2(3584, 2336, 4992)
	SUBAVX2_SUB4F2(3840, 2352, 5056)
	SUBAVX2_EPI_Q6K(0, Y4, Y8)
	SUBAVX2_EPI_Q6K(1, Y5, Y9)
	SUBAVX2_EPI_Q6K(2, Y6, Y10)
	SUBAVX2_EPI_Q6K(3, Y7, Y11)
	SUBAVX2_NEXT(5696)
	DECQ CX
	JNZ subAVX2Q6KSB
subAVX2Q6KStore:
	SUBAVX2_STORE
	VZEROUPPER
	RET
