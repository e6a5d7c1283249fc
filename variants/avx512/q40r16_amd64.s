//go:build !noasm

#include "textflag.h"
#include "r16_amd64.h"

// The interleaved Q4_0 decode kernel for AVX-512 VNNI (r16blocks.go's
// q4_0-r16 layout): a 64-byte line is 16 rows' 4 quant bytes, one ZMM.
// Per block of 32 values and group of 16 rows, the four lines split into
// low and high nibbles (unsigned, q = w + 8) take 8 VPDPBUSD against the
// broadcast activation dwords (values 4j… and 16+4j…) into two int32
// chains, less 8·Σx, times d_w·d_x into the rows' float sums (Z0).
// Z15 holds 0x0f bytes.

// V4_ONE is one block of the group at off(base)(idx*1) (activations at R8)
// into the float sums f: lines into l0-l3 (low nibbles) and h0-h3 (high),
// int32 chains a and b, d_w in d.
#define V4_ONE(idx, l0, l1, l2, l3, h0, h1, h2, h3, a, b, d, f) \
	VMOVDQU64     32(SI)(idx*1), l0; \
	VMOVDQU64     96(SI)(idx*1), l1; \
	VMOVDQU64     160(SI)(idx*1), l2; \
	VMOVDQU64     224(SI)(idx*1), l3; \
	VPSRLW        $4, l0, h0; \
	VPSRLW        $4, l1, h1; \
	VPSRLW        $4, l2, h2; \
	VPSRLW        $4, l3, h3; \
	VPANDD        Z15, l0, l0; \
	VPANDD        Z15, l1, l1; \
	VPANDD        Z15, l2, l2; \
	VPANDD        Z15, l3, l3; \
	VPANDD        Z15, h0, h0; \
	VPANDD        Z15, h1, h1; \
	VPANDD        Z15, h2, h2; \
	VPANDD        Z15, h3, h3; \
	VPXORD        a, a, a; \
	VPXORD        b, b, b; \
	VPDPBUSD.BCST (R8), l0, a; \
	VPDPBUSD.BCST 16(R8), h0, b; \
	VPDPBUSD.BCST 4(R8), l1, a; \
	VPDPBUSD.BCST 20(R8), h1, b; \
	VPDPBUSD.BCST 8(R8), l2, a; \
	VPDPBUSD.BCST 24(R8), h2, b; \
	VPDPBUSD.BCST 12(R8), l3, a; \
	VPDPBUSD.BCST 28(R8), h3, b; \
	VPADDD        b, a, a; \
	VPSUBD.BCST   32(R8), a, a; \
	VCVTDQ2PS     a, a; \
	VCVTPH2PS     (SI)(idx*1), d; \
	VMULPS.BCST   36(R8), d, d; \
	VFMADD231PS   d, a, f

// V4_BLOCK is one block of the group at SI (activations at R8) into Z0
// (R12 is 0); SI, R11 and R8 step to the next. pf prefetches.
#define V4_BLOCK(pf) \
	pf; \
	V4_ONE(R12, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z2, Z3, Z12, Z0); \
	ADDQ          $288, SI; \
	ADDQ          $288, R11; \
	ADDQ          $40, R8

#define V4_NOPF
#define V4_PF \
	PFW 0(R11); PFW 64(R11); PFW 128(R11); PFW 192(R11); PFW 256(R11)

// V4_FUNC: the arguments, Z15, the loops (no prefetch when dist is 0).
#define V4_FUNC \
	MOVQ w+0(FP), SI; MOVQ x+8(FP), DI; MOVQ dst+16(FP), DX; \
	MOVQ nb+24(FP), CX; MOVQ groups+32(FP), R9; MOVQ dist+40(FP), R11; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z15; \
	XORQ R12, R12; \
	TESTQ R9, R9; JZ done; \
	TESTQ CX, CX; JZ done; \
	TESTQ R11, R11; JNZ pfloop; \
	R16_GROUPS(group, block, V4_BLOCK(V4_NOPF)); \
	JMP done; \
pfloop: \
	ADDQ SI, R11; \
	R16_GROUPS(pgroup, pblock, V4_BLOCK(V4_PF)); \
done: \
	VZEROUPPER; \
	RET

#define PFW PREFETCHT0

// func q40r16Dot(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q40r16Dot(SB), NOSPLIT, $0-48
	V4_FUNC

#undef PFW
#define PFW PREFETCHNTA

// func q40r16DotN(w, x *byte, dst *float32, nb, groups, dist int)
TEXT ·q40r16DotN(SB), NOSPLIT, $0-48
	V4_FUNC

#undef PFW

// func q40r16Dot2(w, x *byte, dst *float32, nb, pairs int)
// Two groups at once (two weight streams a core, nb·288 bytes apart):
// pairs pairs of groups, each block of both against the same activations.
TEXT ·q40r16Dot2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ dst+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ pairs+32(FP), R9
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	TESTQ R9, R9
	JZ    done2
	TESTQ CX, CX
	JZ    done2
	IMUL3Q $288, CX, BX
	XORQ   R12, R12

pair:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ   DI, R8
	MOVQ   CX, R10

blk2:
	V4_ONE(R12, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z2, Z3, Z12, Z0)
	V4_ONE(BX, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z13, Z1)
	ADDQ $288, SI
	ADDQ $40, R8
	DECQ R10
	JNZ  blk2
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ    $128, DX
	ADDQ    BX, SI
	DECQ    R9
	JNZ     pair

done2:
	VZEROUPPER
	RET

// func gemmPackQ40R16Asm(panel, grp *byte, nb int)
// gemmPackQ40R16 in assembly: per block, the four lines' low nibbles are
// k-quads 0-3 and their high nibbles k-quads 4-7 of the panel, then the 16
// d_w widened to float32 (VCVTPH2PS, exact), 576 bytes a block.
TEXT ·gemmPackQ40R16Asm(SB), NOSPLIT, $0-24
	MOVQ panel+0(FP), DI
	MOVQ grp+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    packdone

pack:
	VMOVDQU64 32(SI), Z0
	VMOVDQU64 96(SI), Z1
	VMOVDQU64 160(SI), Z2
	VMOVDQU64 224(SI), Z3
	VPSRLW    $4, Z0, Z4
	VPSRLW    $4, Z1, Z5
	VPSRLW    $4, Z2, Z6
	VPSRLW    $4, Z3, Z7
	VPANDD    Z15, Z0, Z0
	VPANDD    Z15, Z1, Z1
	VPANDD    Z15, Z2, Z2
	VPANDD    Z15, Z3, Z3
	VPANDD    Z15, Z4, Z4
	VPANDD    Z15, Z5, Z5
	VPANDD    Z15, Z6, Z6
	VPANDD    Z15, Z7, Z7
	VCVTPH2PS (SI), Z8
	VMOVDQU64 Z0, (DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	VMOVDQU64 Z4, 256(DI)
	VMOVDQU64 Z5, 320(DI)
	VMOVDQU64 Z6, 384(DI)
	VMOVDQU64 Z7, 448(DI)
	VMOVUPS   Z8, 512(DI)
	ADDQ      $288, SI
	ADDQ      $576, DI
	DECQ      CX
	JNZ       pack

packdone:
	VZEROUPPER
	RET
