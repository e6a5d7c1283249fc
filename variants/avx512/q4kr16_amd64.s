//go:build !noasm

#include "textflag.h"
#include "r16_amd64.h"

// The interleaved Q4_K decode kernel (q4kr16.go): 16 rows a vector lane
// each, so a sub-block is four 64-byte loads, each split into its low and
// high nibbles for two VPDPBUSDs against broadcast activation dwords, then
// one VPMULLD by the rows' scales; no horizontal sums. Z31 holds 0x0f
// bytes; Z0 the group's 16 float sums; Z1, Z2 a super-block's scaled
// products and mins.

// R16_LINE is group g of sub-block s: Z3 += low nibbles · x[32s+4g:],
// Z4 += high nibbles · x[32s+16+4g:].
#define R16_LINE(s, g) \
	VMOVDQU64 (320+((s)*4+(g))*64)(SI), Z8; \
	VPSRLW    $4, Z8, Z9; \
	VPANDD    Z31, Z8, Z8; \
	VPANDD    Z31, Z9, Z9; \
	VPDPBUSD.BCST (32*(s)+4*(g))(R8), Z8, Z3; \
	VPDPBUSD.BCST (32*(s)+16+4*(g))(R8), Z9, Z4

// R16_LINE_PF is R16_LINE with a PREFETCHT0 of the line dist bytes ahead
// (R11 = SI + dist).
#define R16_LINE_PF(s, g) \
	R16_LINE(s, g); \
	PREFETCHT0 (320+((s)*4+(g))*64)(R11)

// R16_SUB is sub-block s through line (R16_LINE or R16_LINE_PF): its 32
// products a row, times the rows' scales, into Z1.
#define R16_SUB(line, s) \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	line(s, 0); line(s, 1); line(s, 2); line(s, 3); \
	VPADDD    Z4, Z3, Z3; \
	VPMOVZXBD (64+16*(s))(SI), Z10; \
	VPMULLD   Z10, Z3, Z3; \
	VPADDD    Z3, Z1, Z1

// R16_MINS is mins pair p: Z2 += m[2p]·sum[2p] + m[2p+1]·sum[2p+1].
#define R16_MINS(p) \
	VPMOVZXBW    (192+32*(p))(SI), Z11; \
	VPBROADCASTD (256+4*(p))(R8), Z12; \
	VPMADDWD     Z12, Z11, Z11; \
	VPADDD       Z11, Z2, Z2

// R16_SCALE adds the super-block to the float sums Z0: d·dx times the
// scaled products, less dmin·dx times the mins.
#define R16_SCALE \
	VCVTDQ2PS         Z1, Z1; \
	VCVTDQ2PS         Z2, Z2; \
	VCVTPH2PS         (SI), Z13; \
	VCVTPH2PS         32(SI), Z14; \
	VMULPS.BCST       272(R8), Z13, Z13; \
	VMULPS.BCST       272(R8), Z14, Z14; \
	VFMADD231PS       Z13, Z1, Z0; \
	VFNMADD231PS      Z14, Z2, Z0

// R16_BLOCK is one super-block of the group at SI, activations at R8,
// through line; SI and R8 step to the next.
#define R16_BLOCK(line) \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	R16_SUB(line, 0); R16_SUB(line, 1); R16_SUB(line, 2); R16_SUB(line, 3); \
	R16_SUB(line, 4); R16_SUB(line, 5); R16_SUB(line, 6); R16_SUB(line, 7); \
	R16_MINS(0); R16_MINS(1); R16_MINS(2); R16_MINS(3); \
	R16_SCALE; \
	ADDQ $2368, SI; ADDQ $2368, R11; \
	ADDQ $288, R8

// R16_PROLOGUE loads the arguments w, x, dst, nb, groups into SI, DI, DX,
// CX, R9 and Z31 with 0x0f bytes, and returns when there is nothing to do.
#define R16_PROLOGUE \
	MOVQ w+0(FP), SI; MOVQ x+8(FP), DI; MOVQ dst+16(FP), DX; \
	MOVQ nb+24(FP), CX; MOVQ groups+32(FP), R9; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z31; \
	TESTQ R9, R9; JZ done; \
	TESTQ CX, CX; JZ done

// R16_HEAD_PF prefetches a block's first five lines (d, scales, mins)
// dist ahead (R11).
#define R16_HEAD_PF \
	PREFETCHT0 0(R11); PREFETCHT0 64(R11); PREFETCHT0 128(R11); \
	PREFETCHT0 192(R11); PREFETCHT0 256(R11)

// R16_PF_GROUPS is R16_GROUPS for the kernels that prefetch the weights:
// R11 = SI + dist (the function's dist+40(FP)), then the groups through
// body.
#define R16_PF_GROUPS(body) \
	MOVQ dist+40(FP), R11; \
	ADDQ SI, R11; \
	R16_GROUPS(group, block, body)

// R16_FUNC is a kernel's whole body around its loops: the prologue, the
// loops, and the return (label done, which the prologue jumps to).
#define R16_FUNC(loops) \
	R16_PROLOGUE; \
	loops; \
done: \
	VZEROUPPER; \
	RET

#define R4_PLAIN R16_BLOCK(R16_LINE)
#define R4_PF R16_HEAD_PF; R16_BLOCK(R16_LINE_PF)

// func q4kr16Dot(w, x *byte, dst *float32, nb, groups int)
TEXT ·q4kr16Dot(SB), NOSPLIT, $0-40
	R16_FUNC(R16_GROUPS(group, block, R4_PLAIN))

// func q4kr16DotPf(w, x *byte, dst *float32, nb, groups, dist int)
// q4kr16Dot with every line of the weights prefetched (PREFETCHT0) dist
// bytes ahead.
TEXT ·q4kr16DotPf(SB), NOSPLIT, $0-48
	R16_FUNC(R16_PF_GROUPS(R4_PF))

// The Q6_K twin (q6kr16.go): per sub-block of 16 weights, the four
// k-groups' low 4 bits from two nibble vectors and their top 2 bits from
// one vector, joined by VPTERNLOGD (lo | (hi & 0x30), Z30 = 0x30 bytes);
// four VPDPBUSDs, less 32 × the activations' sum (the stored values'
// offset), times the rows' signed scales.

// R6_LOADS loads sub-block s's two nibble vectors (Z8, Z9) and its top-bit
// vector (Z10); R6_LOADS_PF also prefetches their lines dist ahead (R11).
#define R6_LOADS(s) \
	VMOVDQU64 (288+192*(s))(SI), Z8; \
	VMOVDQU64 (288+192*(s)+64)(SI), Z9; \
	VMOVDQU64 (288+192*(s)+128)(SI), Z10

#define R6_LOADS_PF(s) \
	R6_LOADS(s); \
	PREFETCHT0 (288+192*(s))(R11); \
	PREFETCHT0 (288+192*(s)+64)(R11); \
	PREFETCHT0 (288+192*(s)+128)(R11)

// R6_SUB is sub-block s, its weights loaded by loads, into Z1.
#define R6_SUB(loads, s) \
	loads(s); \
	R6_BUILD; \
	VPXORD Z3, Z3, Z3; \
	VPDPBUSD.BCST (16*(s))(R8), Z8, Z3; \
	VPDPBUSD.BCST (16*(s)+4)(R8), Z11, Z3; \
	VPDPBUSD.BCST (16*(s)+8)(R8), Z9, Z3; \
	VPDPBUSD.BCST (16*(s)+12)(R8), Z12, Z3; \
	VPSUBD.BCST (256+4*(s))(R8), Z3, Z3; \
	VPMOVSXBD (32+16*(s))(SI), Z14; \
	VPMULLD Z14, Z3, Z3; \
	VPADDD Z3, Z1, Z1

// R6_BLOCK is one super-block of the group at SI, activations at R8,
// through loads; SI and R8 (and R11) step to the next.
#define R6_BLOCK(loads) \
	VPXORD Z1, Z1, Z1; \
	R6_SUB(loads, 0); R6_SUB(loads, 1); R6_SUB(loads, 2); R6_SUB(loads, 3); \
	R6_SUB(loads, 4); R6_SUB(loads, 5); R6_SUB(loads, 6); R6_SUB(loads, 7); \
	R6_SUB(loads, 8); R6_SUB(loads, 9); R6_SUB(loads, 10); R6_SUB(loads, 11); \
	R6_SUB(loads, 12); R6_SUB(loads, 13); R6_SUB(loads, 14); R6_SUB(loads, 15); \
	VCVTDQ2PS Z1, Z1; \
	VCVTPH2PS (SI), Z13; \
	VMULPS.BCST 320(R8), Z13, Z13; \
	VFMADD231PS Z13, Z1, Z0; \
	ADDQ $3360, SI; ADDQ $3360, R11; \
	ADDQ $336, R8

#define R6_PLAIN R6_BLOCK(R6_LOADS)
#define R6_PF R16_HEAD_PF; R6_BLOCK(R6_LOADS_PF)

// func q6kr16Dot(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q6kr16Dot(SB), NOSPLIT, $0-48
	R16_PROLOGUE
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z30
	MOVQ dist+40(FP), R11
	TESTQ R11, R11
	JNZ   pfstart
	R16_GROUPS(group, block, R6_PLAIN)
	JMP done
pfstart:
	ADDQ SI, R11
	R16_GROUPS(pgroup, pblock, R6_PF)
done:
	VZEROUPPER
	RET

// The lighter line (issue 20, Zen 4 VM's one-core stream): the high nibbles
// are taken in place (v & 0xf0, 16× their value), so a line needs no
// shift; a sub-block's high products are shifted back once (exact: every
// one is a multiple of 16). The integer sums, so the results, are
// R16_LINE's bit for bit. R16H_LINE loads the line once; R16M_LINE folds
// the load into both ANDs (a second L1 read, one instruction fewer).
#define R16H_LINE(s, g) \
	VMOVDQU64 (320+((s)*4+(g))*64)(SI), Z8; \
	VPANDND   Z8, Z31, Z9; \
	VPANDD    Z31, Z8, Z8; \
	VPDPBUSD.BCST (32*(s)+4*(g))(R8), Z8, Z3; \
	VPDPBUSD.BCST (32*(s)+16+4*(g))(R8), Z9, Z4

#define R16M_LINE(s, g) R16M_PART(s, g, 320, Z31, Z8, Z9, Z3, Z4)

// R16M_PART is R16M_LINE on the vector at off + the line's offset (the
// whole line in Z registers, or a half of it in Y), the nibble mask m, two
// scratch registers and the low and high accumulators.
#define R16M_PART(s, g, off, m, a, b, lo, hi) \
	VPANDD    (off+((s)*4+(g))*64)(SI), m, a; \
	VPANDND   (off+((s)*4+(g))*64)(SI), m, b; \
	VPDPBUSD.BCST (32*(s)+4*(g))(R8), a, lo; \
	VPDPBUSD.BCST (32*(s)+16+4*(g))(R8), b, hi

#define R16H_SUB(line, s) \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	line(s, 0); line(s, 1); line(s, 2); line(s, 3); \
	VPSRAD    $4, Z4, Z4; \
	VPADDD    Z4, Z3, Z3; \
	VPMOVZXBD (64+16*(s))(SI), Z10; \
	VPMULLD   Z10, Z3, Z3; \
	VPADDD    Z3, Z1, Z1

// R16H_BLOCK_OF is a super-block with sub(line, s) for each sub-block.
#define R16H_BLOCK_OF(sub, line) \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	sub(line, 0); sub(line, 1); sub(line, 2); sub(line, 3); \
	sub(line, 4); sub(line, 5); sub(line, 6); sub(line, 7); \
	R16_MINS(0); R16_MINS(1); R16_MINS(2); R16_MINS(3); \
	R16_SCALE; \
	ADDQ $2368, SI; ADDQ $2368, R11; \
	ADDQ $288, R8

#define R16H_BLOCK(line) R16H_BLOCK_OF(R16H_SUB, line)

#define R4H R16H_BLOCK(R16H_LINE)
#define R4M R16H_BLOCK(R16M_LINE)

// func q4kr16DotH(w, x *byte, dst *float32, nb, groups int)
TEXT ·q4kr16DotH(SB), NOSPLIT, $0-40
	R16_FUNC(R16_GROUPS(group, block, R4H))

// func q4kr16DotM(w, x *byte, dst *float32, nb, groups int)
TEXT ·q4kr16DotM(SB), NOSPLIT, $0-40
	R16_FUNC(R16_GROUPS(group, block, R4M))

// func q4kr16DotMK(w, x *byte, dst *float32, nb, groups, stride int)
// q4kr16DotM over nb super-blocks of each group, the groups stride bytes
// apart, adding to dst's sums (Z0 starts from them): one column chunk of
// a k-blocked product, so a chunk's activations stay in L1 while the
// weights stream past them.
TEXT ·q4kr16DotMK(SB), NOSPLIT, $0-48
	R16_PROLOGUE
	MOVQ stride+40(FP), R14
	MOVQ SI, R13
kgroup:
	VMOVUPS (DX), Z0
	MOVQ    R13, SI
	MOVQ    DI, R8
	MOVQ    CX, R10
kblock:
	R4M
	DECQ R10
	JNZ  kblock
	VMOVUPS Z0, (DX)
	ADDQ    $64, DX
	ADDQ    R14, R13
	DECQ    R9
	JNZ     kgroup
done:
	VZEROUPPER
	RET

// func q4kr16DotMX(w, x *byte, dst *float32, nb, groups int)
// q4kr16DotM prefetching the next super-block's activations (288 bytes)
// at each block: a group longer than L1 evicts them between groups.
#define R4MX \
	PREFETCHT0 288(R8); PREFETCHT0 352(R8); PREFETCHT0 416(R8); \
	PREFETCHT0 480(R8); PREFETCHT0 544(R8); \
	R4M

TEXT ·q4kr16DotMX(SB), NOSPLIT, $0-40
	R16_FUNC(R16_GROUPS(group, block, R4MX))

// The hmx block with two accumulator chains a sub-block (issue 20, one
// Zen 4 core): lines 0-1 into Z3/Z4, lines 2-3 into Z5/Z6 (scratch Z15,
// Z16), added before the shift, so each chain is two VPDPBUSDs deep
// instead of four. Integer sums: R16M_LINE's results bit for bit.
#define R16C_LINE2(s, g) R16M_PART(s, g, 320, Z31, Z15, Z16, Z5, Z6)

#define R16C_SUB(line, s) \
	VPXORD    Z3, Z3, Z3; \
	VPXORD    Z4, Z4, Z4; \
	VPXORD    Z5, Z5, Z5; \
	VPXORD    Z6, Z6, Z6; \
	line(s, 0); R16C_LINE2(s, 2); line(s, 1); R16C_LINE2(s, 3); \
	VPADDD    Z5, Z3, Z3; \
	VPADDD    Z6, Z4, Z4; \
	VPSRAD    $4, Z4, Z4; \
	VPADDD    Z4, Z3, Z3; \
	VPMOVZXBD (64+16*(s))(SI), Z10; \
	VPMULLD   Z10, Z3, Z3; \
	VPADDD    Z3, Z1, Z1

#define R4MXC \
	PREFETCHT0 288(R8); PREFETCHT0 352(R8); PREFETCHT0 416(R8); \
	PREFETCHT0 480(R8); PREFETCHT0 544(R8); \
	R16H_BLOCK_OF(R16C_SUB, R16M_LINE)

// func q4kr16DotMXC(w, x *byte, dst *float32, nb, groups int)
TEXT ·q4kr16DotMXC(SB), NOSPLIT, $0-40
	R16_FUNC(R16_GROUPS(group, block, R4MXC))

// Two streams (issue 20: one Zen 4 core streams more from two distant
// sequences than from one): groups A (SI) and B (R12) in one pass, each
// with R16M_LINE's work, the activation dwords broadcast once for both.
// A's registers are R16's (Z0-Z4, Z8, Z9); B's Z20-Z24, Z25, Z26; Z17,
// Z18 the broadcast activations. Results are q4kr16Dot's bit for bit.
#define R2_LINE(s, g) \
	VPBROADCASTD (32*(s)+4*(g))(R8), Z17; \
	VPBROADCASTD (32*(s)+16+4*(g))(R8), Z18; \
	VPANDD    (320+((s)*4+(g))*64)(SI), Z31, Z8; \
	VPANDND   (320+((s)*4+(g))*64)(SI), Z31, Z9; \
	VPANDD    (320+((s)*4+(g))*64)(R12), Z31, Z25; \
	VPANDND   (320+((s)*4+(g))*64)(R12), Z31, Z26; \
	VPDPBUSD  Z17, Z8, Z3; \
	VPDPBUSD  Z18, Z9, Z4; \
	VPDPBUSD  Z17, Z25, Z23; \
	VPDPBUSD  Z18, Z26, Z24

#define R2_SUB(s) \
	VPXORD    Z3, Z3, Z3; VPXORD Z4, Z4, Z4; \
	VPXORD    Z23, Z23, Z23; VPXORD Z24, Z24, Z24; \
	R2_LINE(s, 0); R2_LINE(s, 1); R2_LINE(s, 2); R2_LINE(s, 3); \
	VPSRAD    $4, Z4, Z4; VPADDD Z4, Z3, Z3; \
	VPSRAD    $4, Z24, Z24; VPADDD Z24, Z23, Z23; \
	VPMOVZXBD (64+16*(s))(SI), Z10; VPMULLD Z10, Z3, Z3; VPADDD Z3, Z1, Z1; \
	VPMOVZXBD (64+16*(s))(R12), Z27; VPMULLD Z27, Z23, Z23; VPADDD Z23, Z21, Z21

#define R2_MINS(p) \
	VPBROADCASTD (256+4*(p))(R8), Z12; \
	VPMOVZXBW    (192+32*(p))(SI), Z11; VPMADDWD Z12, Z11, Z11; VPADDD Z11, Z2, Z2; \
	VPMOVZXBW    (192+32*(p))(R12), Z28; VPMADDWD Z12, Z28, Z28; VPADDD Z28, Z22, Z22

#define R2_SCALE \
	VBROADCASTSS 272(R8), Z19; \
	VCVTDQ2PS Z1, Z1; VCVTDQ2PS Z2, Z2; \
	VCVTPH2PS (SI), Z13; VCVTPH2PS 32(SI), Z14; \
	VMULPS Z19, Z13, Z13; VMULPS Z19, Z14, Z14; \
	VFMADD231PS Z13, Z1, Z0; VFNMADD231PS Z14, Z2, Z0; \
	VCVTDQ2PS Z21, Z21; VCVTDQ2PS Z22, Z22; \
	VCVTPH2PS (R12), Z13; VCVTPH2PS 32(R12), Z14; \
	VMULPS Z19, Z13, Z13; VMULPS Z19, Z14, Z14; \
	VFMADD231PS Z13, Z21, Z20; VFNMADD231PS Z14, Z22, Z20

// R2_PAIRS runs the pairs of groups (R9), each nb (CX) super-blocks: head
// first in each block, sub for each sub-block, step after the block's
// pointer steps; pair and blk name its labels.
#define R2_PAIRS(pair, blk, head, sub, step) \
pair: \
	VPXORD Z0, Z0, Z0; VPXORD Z20, Z20, Z20; \
	MOVQ   DI, R8; \
	MOVQ   CX, R10; \
blk: \
	head; \
	VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; \
	VPXORD Z21, Z21, Z21; VPXORD Z22, Z22, Z22; \
	sub(0); sub(1); sub(2); sub(3); \
	sub(4); sub(5); sub(6); sub(7); \
	R2_MINS(0); R2_MINS(1); R2_MINS(2); R2_MINS(3); \
	R2_SCALE; \
	ADDQ $2368, SI; ADDQ $2368, R12; \
	step; \
	ADDQ $288, R8; \
	DECQ R10; \
	JNZ  blk; \
	VMOVUPS Z0, (DX); VMOVUPS Z20, (BX); \
	ADDQ    $64, DX; ADDQ $64, BX; \
	DECQ    R9; \
	JNZ     pair

#define R2_NONE

// func q4kr16Dot2(w, x *byte, dst *float32, nb, groups int, w2 *byte, dst2 *float32)
// groups pairs: group i of w (sums at dst) beside group i of w2 (at dst2).
TEXT ·q4kr16Dot2(SB), NOSPLIT, $0-56
	R16_PROLOGUE
	MOVQ w2+40(FP), R12
	MOVQ dst2+48(FP), BX
	R2_PAIRS(pair, pblock, R2_NONE, R2_SUB, R2_NONE)
done:
	VZEROUPPER
	RET

// func q4kr16DotMXPf(w, x *byte, dst *float32, nb, groups, dist int)
// q4kr16DotMX with every weight line prefetched dist bytes ahead (R11), as
// q4kr16DotPf prefetches q4kr16Dot's: for the Intel host, whose one-copy
// decode reads most with PREFETCHT0 4 KiB ahead.
#define R16M_LINE_PF(s, g) \
	R16M_LINE(s, g); \
	PREFETCHT0 (320+((s)*4+(g))*64)(R11)

#define R4MXPF \
	PREFETCHT0 288(R8); PREFETCHT0 352(R8); PREFETCHT0 416(R8); \
	PREFETCHT0 480(R8); PREFETCHT0 544(R8); \
	R16_HEAD_PF; \
	R16H_BLOCK(R16M_LINE_PF)

TEXT ·q4kr16DotMXPf(SB), NOSPLIT, $0-48
	R16_FUNC(R16_PF_GROUPS(R4MXPF))

// L2 prefetch (issue 20, the Intel host's one-core stream): PREFETCHT0
// fills L1 through the core's few line fill buffers, which the demand
// loads need too; PREFETCHT1 stops at L2, whose queue holds several times
// as many misses, so a stream can run further ahead. Non-temporal
// prefetch (issue 20, Zen 5's stream): PREFETCHNTA marks the lines for
// early eviction, so a weight stream read once a token does not push the
// activations and the next lines out (the stored layout's pf8k-nta read
// the most of the shipped kernels on Zen 5). The twins of q4kr16DotMXPf
// and q6kr16Dot's prefetching form with the hint PFW (defined before each
// kernel) for every weight line; the activations, reread from L1, keep
// PREFETCHT0.
#define R16M_LINE_PFW(s, g) \
	R16M_LINE(s, g); \
	PFW (320+((s)*4+(g))*64)(R11)

#define R16_HEAD_PFW \
	PFW 0(R11); PFW 64(R11); PFW 128(R11); \
	PFW 192(R11); PFW 256(R11)

#define R4MXPFW \
	PREFETCHT0 288(R8); PREFETCHT0 352(R8); PREFETCHT0 416(R8); \
	PREFETCHT0 480(R8); PREFETCHT0 544(R8); \
	R16_HEAD_PFW; \
	R16H_BLOCK(R16M_LINE_PFW)

#define R6_LOADS_PFW(s) \
	R6_LOADS(s); \
	PFW (288+192*(s))(R11); \
	PFW (288+192*(s)+64)(R11); \
	PFW (288+192*(s)+128)(R11)

#define R6_PFW R16_HEAD_PFW; R6_BLOCK(R6_LOADS_PFW)

#define R6_PFW_FUNC \
	R16_PROLOGUE; \
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z30; \
	R16_PF_GROUPS(R6_PFW); \
done: \
	VZEROUPPER; \
	RET

#define PFW PREFETCHT1

// func q4kr16DotMXPf1(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q4kr16DotMXPf1(SB), NOSPLIT, $0-48
	R16_FUNC(R16_PF_GROUPS(R4MXPFW))

// func q6kr16DotPf1(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q6kr16DotPf1(SB), NOSPLIT, $0-48
	R6_PFW_FUNC

#undef PFW
#define PFW PREFETCHNTA

// func q4kr16DotMXPfN(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q4kr16DotMXPfN(SB), NOSPLIT, $0-48
	R16_FUNC(R16_PF_GROUPS(R4MXPFW))

// func q6kr16DotPfN(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q6kr16DotPfN(SB), NOSPLIT, $0-48
	R6_PFW_FUNC

#undef PFW

// Two streams with the Zen 5 bundle's prefetches (issue 20: a plain
// two-stream read beats one stream by 10-20 % on Zen 5, and the two-stream
// kernel without prefetch lost to -hmx-nta8k): q4kr16Dot2's pass with the
// next super-block's activations prefetched (PREFETCHT0, as hmx) and
// every weight line of both streams dist ahead with PREFETCHNTA (R11 for
// A, R13 for B). Results are q4kr16Dot2's bit for bit.
#define R2N_LINE(s, g) \
	R2_LINE(s, g); \
	PREFETCHNTA (320+((s)*4+(g))*64)(R11); \
	PREFETCHNTA (320+((s)*4+(g))*64)(R13)

#define R2N_SUB(s) \
	VPXORD    Z3, Z3, Z3; VPXORD Z4, Z4, Z4; \
	VPXORD    Z23, Z23, Z23; VPXORD Z24, Z24, Z24; \
	R2N_LINE(s, 0); R2N_LINE(s, 1); R2N_LINE(s, 2); R2N_LINE(s, 3); \
	VPSRAD    $4, Z4, Z4; VPADDD Z4, Z3, Z3; \
	VPSRAD    $4, Z24, Z24; VPADDD Z24, Z23, Z23; \
	VPMOVZXBD (64+16*(s))(SI), Z10; VPMULLD Z10, Z3, Z3; VPADDD Z3, Z1, Z1; \
	VPMOVZXBD (64+16*(s))(R12), Z27; VPMULLD Z27, Z23, Z23; VPADDD Z23, Z21, Z21

#define R2N_HEAD \
	PREFETCHT0 288(R8); PREFETCHT0 352(R8); PREFETCHT0 416(R8); \
	PREFETCHT0 480(R8); PREFETCHT0 544(R8); \
	PREFETCHNTA 0(R11); PREFETCHNTA 64(R11); PREFETCHNTA 128(R11); PREFETCHNTA 192(R11); PREFETCHNTA 256(R11); \
	PREFETCHNTA 0(R13); PREFETCHNTA 64(R13); PREFETCHNTA 128(R13); PREFETCHNTA 192(R13); PREFETCHNTA 256(R13)

#define R2N_STEP ADDQ $2368, R11; ADDQ $2368, R13

// func q4kr16Dot2N(w, x *byte, dst *float32, nb, groups int, w2 *byte, dst2 *float32, dist int)
TEXT ·q4kr16Dot2N(SB), NOSPLIT, $0-64
	R16_PROLOGUE
	MOVQ w2+40(FP), R12
	MOVQ dst2+48(FP), BX
	MOVQ dist+56(FP), R11
	LEAQ (R12)(R11*1), R13
	ADDQ SI, R11
	R2_PAIRS(npair, nblock, R2N_HEAD, R2N_SUB, R2N_STEP)
done:
	VZEROUPPER
	RET

// The lighter line in 256-bit halves (issue 20, the AMD one-core gap:
// llama.cpp's AVX2 Q4_K decode streams 20-30 % more on one Zen 4 core,
// and a plain 256-bit sweep a little more than a 512-bit one): rows 0-7
// are each line's first 32 bytes, rows 8-15 its last, every step of
// R16H_BLOCK done on each half with the same per-row arithmetic, so the
// results are q4kr16DotM's bit for bit. Accumulators: rows 0-7 Y3/Y4
// (products), Y1 (scaled), Y2 (mins), Y0 (floats); rows 8-15 Y5/Y6, Y12,
// Y13, Y21.
#define R16Y_LINE(s, g) \
	R16M_PART(s, g, 320, Y31, Y8, Y9, Y3, Y4); \
	R16M_PART(s, g, 352, Y31, Y10, Y11, Y5, Y6)

#define R16Y_SUB(s) \
	VPXORD    Y3, Y3, Y3; \
	VPXORD    Y4, Y4, Y4; \
	VPXORD    Y5, Y5, Y5; \
	VPXORD    Y6, Y6, Y6; \
	R16Y_LINE(s, 0); R16Y_LINE(s, 1); R16Y_LINE(s, 2); R16Y_LINE(s, 3); \
	VPSRAD    $4, Y4, Y4; \
	VPSRAD    $4, Y6, Y6; \
	VPADDD    Y4, Y3, Y3; \
	VPADDD    Y6, Y5, Y5; \
	VPMOVZXBD (64+16*(s))(SI), Y10; \
	VPMOVZXBD (72+16*(s))(SI), Y11; \
	VPMULLD   Y10, Y3, Y3; \
	VPMULLD   Y11, Y5, Y5; \
	VPADDD    Y3, Y1, Y1; \
	VPADDD    Y5, Y12, Y12

#define R16Y_MINS(p) \
	VPMOVZXBW    (192+32*(p))(SI), Y14; \
	VPMOVZXBW    (208+32*(p))(SI), Y15; \
	VPBROADCASTD (256+4*(p))(R8), Y16; \
	VPMADDWD     Y16, Y14, Y14; \
	VPMADDWD     Y16, Y15, Y15; \
	VPADDD       Y14, Y2, Y2; \
	VPADDD       Y15, Y13, Y13

#define R16Y_SCALE \
	VCVTDQ2PS         Y1, Y1; \
	VCVTDQ2PS         Y12, Y12; \
	VCVTDQ2PS         Y2, Y2; \
	VCVTDQ2PS         Y13, Y13; \
	VCVTPH2PS         (SI), Y17; \
	VCVTPH2PS         16(SI), Y18; \
	VCVTPH2PS         32(SI), Y19; \
	VCVTPH2PS         48(SI), Y20; \
	VMULPS.BCST       272(R8), Y17, Y17; \
	VMULPS.BCST       272(R8), Y18, Y18; \
	VMULPS.BCST       272(R8), Y19, Y19; \
	VMULPS.BCST       272(R8), Y20, Y20; \
	VFMADD231PS       Y17, Y1, Y0; \
	VFMADD231PS       Y18, Y12, Y21; \
	VFNMADD231PS      Y19, Y2, Y0; \
	VFNMADD231PS      Y20, Y13, Y21

#define R16Y_BLOCK \
	PREFETCHT0 288(R8); PREFETCHT0 352(R8); PREFETCHT0 416(R8); \
	PREFETCHT0 480(R8); PREFETCHT0 544(R8); \
	VPXORD Y1, Y1, Y1; \
	VPXORD Y2, Y2, Y2; \
	VPXORD Y12, Y12, Y12; \
	VPXORD Y13, Y13, Y13; \
	R16Y_SUB(0); R16Y_SUB(1); R16Y_SUB(2); R16Y_SUB(3); \
	R16Y_SUB(4); R16Y_SUB(5); R16Y_SUB(6); R16Y_SUB(7); \
	R16Y_MINS(0); R16Y_MINS(1); R16Y_MINS(2); R16Y_MINS(3); \
	R16Y_SCALE; \
	ADDQ $2368, SI; \
	ADDQ $288, R8

// func q4kr16DotMXY(w, x *byte, dst *float32, nb, groups int)
TEXT ·q4kr16DotMXY(SB), NOSPLIT, $0-40
	R16_PROLOGUE
ygroup:
	VPXORD Y0, Y0, Y0
	VPXORD Y21, Y21, Y21
	MOVQ   DI, R8
	MOVQ   CX, R10
yblock:
	R16Y_BLOCK
	DECQ R10
	JNZ  yblock
	VMOVUPS Y0, (DX)
	VMOVUPS Y21, 32(DX)
	ADDQ    $64, DX
	DECQ    R9
	JNZ     ygroup
done:
	VZEROUPPER
	RET

// func q6kr16DotX(w, x *byte, dst *float32, nb, groups int)
// q6kr16Dot (no weight prefetch) prefetching the next super-block's
// activations (336 bytes) at each block, as q4kr16DotMX does Q4_K's.
#define R6X \
	PREFETCHT0 336(R8); PREFETCHT0 400(R8); PREFETCHT0 464(R8); \
	PREFETCHT0 528(R8); PREFETCHT0 592(R8); PREFETCHT0 656(R8); \
	R6_BLOCK(R6_LOADS)

TEXT ·q6kr16DotX(SB), NOSPLIT, $0-40
	R16_PROLOGUE
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z30
	R16_GROUPS(group, block, R6X)
done:
	VZEROUPPER
	RET
