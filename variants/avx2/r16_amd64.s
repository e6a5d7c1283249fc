//go:build !noasm

#include "textflag.h"
#include "r16_amd64.h"

// Decode matvecs over the interleaved layouts of variants/avx512
// (q4kr16.go, q6kr16.go: 16 rows a 64-byte line, 4 bytes a row) for CPUs
// without AVX-512: each 64-byte line is two 256-bit halves, rows 0-7 and
// rows 8-15, against the same broadcast activation dwords. The one-row
// AVX2 kernels spend most of a super-block on scales, mins and horizontal
// sums; here those are paid once for 16 rows. No VNNI: VPMADDUBSW's word
// sums are exact (Q4_K: 8 products of 15 × |x| ≤ 128 a word and sub-block,
// ≤ 30720; Q6_K: two pairs of 63 × 128, ≤ 32256), then VPMADDWD widens
// them. The integer sums are the AVX-512 kernels', and the float steps
// are theirs in the same order: the results are q4kr16Dot's and
// q6kr16Dot's bit for bit.

// Scale words for VPMADDWD: byte r of a sub-block's 16 scales (loaded to
// both lanes) to both words of dword r, rows 0-7 (r16ScaleLo) and 8-15
// (r16ScaleHi).
DATA r16ScaleLo<>+0(SB)/8, $0x8001800180008000
DATA r16ScaleLo<>+8(SB)/8, $0x8003800380028002
DATA r16ScaleLo<>+16(SB)/8, $0x8005800580048004
DATA r16ScaleLo<>+24(SB)/8, $0x8007800780068006
GLOBL r16ScaleLo<>(SB), RODATA|NOPTR, $32
DATA r16ScaleHi<>+0(SB)/8, $0x8009800980088008
DATA r16ScaleHi<>+8(SB)/8, $0x800b800b800a800a
DATA r16ScaleHi<>+16(SB)/8, $0x800d800d800c800c
DATA r16ScaleHi<>+24(SB)/8, $0x800f800f800e800e
GLOBL r16ScaleHi<>(SB), RODATA|NOPTR, $32
DATA r16Ones<>+0(SB)/8, $0x0001000100010001
DATA r16Ones<>+8(SB)/8, $0x0001000100010001
DATA r16Ones<>+16(SB)/8, $0x0001000100010001
DATA r16Ones<>+24(SB)/8, $0x0001000100010001
GLOBL r16Ones<>(SB), RODATA|NOPTR, $32

// A2_PART is one half (off: 0 rows 0-7, 32 rows 8-15) of line (s, g):
// its low nibbles (a) times the low activations (Y8), its high nibbles
// (b) times the high ones (Y9), added into the word sums acc (op: VPADDW
// into acc, or the first line's move). Y15 holds 0x0f bytes.
#define A2_PART(s, g, off, a, b) \
	VPAND      (320+((s)*4+(g))*64+off)(SI), Y15, a; \
	VPANDN     (320+((s)*4+(g))*64+off)(SI), Y15, b; \
	VPSRLW     $4, b, b; \
	VPMADDUBSW Y8, a, a; \
	VPMADDUBSW Y9, b, b; \
	VPADDW     b, a, a

// A2_LINE is line (s, g) of both halves into the word sums Y4 (rows 0-7)
// and Y5 (8-15); A2_FIRST starts them with sub-block s's line 0.
#define A2_BCAST(s, g) \
	VPBROADCASTD (32*(s)+4*(g))(R8), Y8; \
	VPBROADCASTD (32*(s)+16+4*(g))(R8), Y9

#define A2_FIRST(s, g) \
	A2_BCAST(s, g); \
	A2_PART(s, g, 0, Y4, Y10); \
	A2_PART(s, g, 32, Y5, Y11)

#define A2_LINE(s, g) \
	A2_BCAST(s, g); \
	A2_PART(s, g, 0, Y6, Y10); \
	A2_PART(s, g, 32, Y7, Y11); \
	VPADDW Y6, Y4, Y4; \
	VPADDW Y7, Y5, Y5

// A2_PF prefetches sub-block s's four lines dist ahead (R11 = SI + dist)
// with PFW: PREFETCHT0 in the T0 kernels, PREFETCHNTA in the NTA ones
// (defined before each kernel).
#define A2_PF(s) \
	PFW (320+(s)*256)(R11); PFW (320+(s)*256+64)(R11); \
	PFW (320+(s)*256+128)(R11); PFW (320+(s)*256+192)(R11)

#define A2_NOPF(s)

// A2_SUB is sub-block s: its word sums times the rows' scales (words from
// r16ScaleLo/Hi's shuffles, Y13 and Y14) into the int32 sums Y2, Y3.
#define A2_SUB(pf, s) \
	pf(s); \
	A2_FIRST(s, 0); A2_LINE(s, 1); A2_LINE(s, 2); A2_LINE(s, 3); \
	VBROADCASTI128 (64+16*(s))(SI), Y6; \
	VPSHUFB        Y14, Y6, Y7; \
	VPSHUFB        Y13, Y6, Y6; \
	VPMADDWD       Y6, Y4, Y4; \
	VPMADDWD       Y7, Y5, Y5; \
	VPADDD         Y4, Y2, Y2; \
	VPADDD         Y5, Y3, Y3

// A2_MINS is mins pair p into Y10 (rows 0-7) and Y11:
// m[2p]·sum[2p] + m[2p+1]·sum[2p+1].
#define A2_MINS(p) \
	VPBROADCASTD (256+4*(p))(R8), Y8; \
	VPMOVZXBW    (192+32*(p))(SI), Y6; \
	VPMOVZXBW    (192+32*(p)+16)(SI), Y7; \
	VPMADDWD     Y8, Y6, Y6; \
	VPMADDWD     Y8, Y7, Y7; \
	VPADDD       Y6, Y10, Y10; \
	VPADDD       Y7, Y11, Y11

// A2_BLOCK is one super-block of the group at SI (activations at R8) into
// the float sums Y0, Y1: d·dx times the scaled sums, less dmin·dx times the
// mins; SI, R11 and R8 step to the next.
#define A2_BLOCK(pf) \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	A2_SUB(pf, 0); A2_SUB(pf, 1); A2_SUB(pf, 2); A2_SUB(pf, 3); \
	A2_SUB(pf, 4); A2_SUB(pf, 5); A2_SUB(pf, 6); A2_SUB(pf, 7); \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11; \
	A2_MINS(0); A2_MINS(1); A2_MINS(2); A2_MINS(3); \
	R2_DSCALE(272, Y12, Y6, Y7); \
	VCVTDQ2PS    Y10, Y10; \
	VCVTDQ2PS    Y11, Y11; \
	VCVTPH2PS    32(SI), Y6; \
	VCVTPH2PS    48(SI), Y7; \
	VMULPS       Y12, Y6, Y6; \
	VMULPS       Y12, Y7, Y7; \
	VFNMADD231PS Y6, Y10, Y0; \
	VFNMADD231PS Y7, Y11, Y1; \
	ADDQ $2368, SI; ADDQ $2368, R11; \
	ADDQ $288, R8

// A2_HEAD_PF prefetches a block's first five lines (d, scales, mins).
#define A2_HEAD_PF \
	PFW 0(R11); PFW 64(R11); PFW 128(R11); \
	PFW 192(R11); PFW 256(R11)

#define A2_PLAIN A2_BLOCK(A2_NOPF)
#define A2_PFB A2_HEAD_PF; A2_BLOCK(A2_PF)

// A2_Q4K_FUNC is the Q4_K kernel's body.
#define A2_Q4K_FUNC \
	R2_ARGS; \
	VMOVDQU r16ScaleLo<>(SB), Y13; \
	VMOVDQU r16ScaleHi<>(SB), Y14; \
	R2_LOOPS(A2_PLAIN, A2_PFB)

#define PFW PREFETCHT0

// func q4kr16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)
// Q4_K over the interleaved layout, every weight line prefetched
// (PREFETCHT0) dist bytes ahead when dist > 0.
TEXT ·q4kr16DotAVX2(SB), NOSPLIT, $0-48
	A2_Q4K_FUNC

#undef PFW
#define PFW PREFETCHNTA

// func q4kr16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)
// q4kr16DotAVX2 prefetching with PREFETCHNTA.
TEXT ·q4kr16DotAVX2N(SB), NOSPLIT, $0-48
	A2_Q4K_FUNC

#undef PFW

// The Q6_K twin (q6kr16.go's layout): sub-block s (16 weights) is two
// nibble lines and a line of top bits; each half's four k-quads are built
// as R6_BUILD builds them (lo | (hi << 4 − 2g) & 0x30, Y14 = 0x30 bytes),
// multiplied by the broadcast activations (Y8-Y11, shared by the halves),
// pairs of word sums widened by VPMADDWD by ones, less 32 × the
// activations' sum, times the rows' signed scales.

// A6_HALF is half h (0: rows 0-7, 1: 8-15) of sub-block s into the int32
// sums acc.
#define A6_HALF(s, h, acc) \
	VPAND      (288+192*(s)+32*(h))(SI), Y15, Y4; \
	VPANDN     (288+192*(s)+32*(h))(SI), Y15, Y5; \
	VPSRLW     $4, Y5, Y5; \
	VPAND      (288+192*(s)+64+32*(h))(SI), Y15, Y6; \
	VPANDN     (288+192*(s)+64+32*(h))(SI), Y15, Y7; \
	VPSRLW     $4, Y7, Y7; \
	VMOVDQU    (288+192*(s)+128+32*(h))(SI), Y12; \
	VPSLLW     $4, Y12, Y13; VPAND Y14, Y13, Y13; VPOR Y13, Y4, Y4; \
	VPSLLW     $2, Y12, Y13; VPAND Y14, Y13, Y13; VPOR Y13, Y5, Y5; \
	VPAND      Y14, Y12, Y13; VPOR Y13, Y6, Y6; \
	VPSRLW     $2, Y12, Y13; VPAND Y14, Y13, Y13; VPOR Y13, Y7, Y7; \
	VPMADDUBSW Y8, Y4, Y4; \
	VPMADDUBSW Y9, Y5, Y5; \
	VPMADDUBSW Y10, Y6, Y6; \
	VPMADDUBSW Y11, Y7, Y7; \
	VPADDW     Y5, Y4, Y4; \
	VPADDW     Y7, Y6, Y6; \
	VPMADDWD   r16Ones<>(SB), Y4, Y4; \
	VPMADDWD   r16Ones<>(SB), Y6, Y6; \
	VPADDD     Y6, Y4, Y4; \
	VPBROADCASTD (256+4*(s))(R8), Y12; \
	VPSUBD     Y12, Y4, Y4; \
	VPMOVSXBD  (32+16*(s)+8*(h))(SI), Y13; \
	VPMULLD    Y13, Y4, Y4; \
	VPADDD     Y4, acc, acc

#define A6_PF(s) \
	PFW (288+192*(s))(R11); PFW (288+192*(s)+64)(R11); \
	PFW (288+192*(s)+128)(R11)

#define A6_SUB(pf, s) \
	pf(s); \
	VPBROADCASTD (16*(s))(R8), Y8; \
	VPBROADCASTD (16*(s)+4)(R8), Y9; \
	VPBROADCASTD (16*(s)+8)(R8), Y10; \
	VPBROADCASTD (16*(s)+12)(R8), Y11; \
	A6_HALF(s, 0, Y2); \
	A6_HALF(s, 1, Y3)

#define A6_BLOCK(pf) \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	A6_SUB(pf, 0); A6_SUB(pf, 1); A6_SUB(pf, 2); A6_SUB(pf, 3); \
	A6_SUB(pf, 4); A6_SUB(pf, 5); A6_SUB(pf, 6); A6_SUB(pf, 7); \
	A6_SUB(pf, 8); A6_SUB(pf, 9); A6_SUB(pf, 10); A6_SUB(pf, 11); \
	A6_SUB(pf, 12); A6_SUB(pf, 13); A6_SUB(pf, 14); A6_SUB(pf, 15); \
	R2_DSCALE(320, Y12, Y6, Y7); \
	ADDQ $3360, SI; ADDQ $3360, R11; \
	ADDQ $336, R8

#define A6_PLAIN A6_BLOCK(A2_NOPF)
#define A6_PFB A2_HEAD_PF; A6_BLOCK(A6_PF)

#define A6_Q6K_FUNC \
	R2_ARGS; \
	MOVL    $0x30303030, AX; \
	VMOVD   AX, X14; \
	VPBROADCASTD X14, Y14; \
	R2_LOOPS(A6_PLAIN, A6_PFB)

#define PFW PREFETCHT0

// func q6kr16DotAVX2(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q6kr16DotAVX2(SB), NOSPLIT, $0-48
	A6_Q6K_FUNC

#undef PFW
#define PFW PREFETCHNTA

// func q6kr16DotAVX2N(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q6kr16DotAVX2N(SB), NOSPLIT, $0-48
	A6_Q6K_FUNC

#undef PFW
