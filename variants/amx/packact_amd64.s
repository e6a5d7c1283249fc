//go:build !noasm

#include "textflag.h"

DATA packOnes<>+0(SB)/4, $0x00010001
GLOBL packOnes<>(SB), RODATA|NOPTR, $4

// func packTokenQ8K(tiles, dx, bsums, src *byte, nb int, sum32 bool)
//
// One token's nb Q8_K blocks (src, 292 bytes apart: d, 256 quants, 16
// int16 sums) into its places in the activation pack, one super-block
// (9344 bytes) apart: the quants' four 64-byte chunks into tile rows 2048
// bytes apart from tiles, d to dx, and the sums to bsums, or with sum32 the
// eight sums of adjacent pairs (int16, wrapping as packActivationsGo's).
TEXT ·packTokenQ8K(SB), NOSPLIT, $0-41
	MOVQ tiles+0(FP), DI
	MOVQ dx+8(FP), R8
	MOVQ bsums+16(FP), R9
	MOVQ src+24(FP), SI
	MOVQ nb+32(FP), CX
	MOVBLZX sum32+40(FP), DX
	VPBROADCASTD packOnes<>+0(SB), Y5

block:
	VMOVDQU8 4(SI), Z0
	VMOVDQU8 68(SI), Z1
	VMOVDQU8 132(SI), Z2
	VMOVDQU8 196(SI), Z3
	VMOVDQU8 Z0, (DI)
	VMOVDQU8 Z1, 2048(DI)
	VMOVDQU8 Z2, 4096(DI)
	VMOVDQU8 Z3, 6144(DI)
	MOVL (SI), AX
	MOVL AX, (R8)
	VMOVDQU 260(SI), Y4
	TESTQ DX, DX
	JNZ  sums32
	VMOVDQU Y4, (R9)
	JMP  next

sums32:
	VPMADDWD Y5, Y4, Y4
	VPMOVDW Y4, X4
	VMOVDQU X4, (R9)

next:
	ADDQ $292, SI
	ADDQ $9344, DI
	ADDQ $9344, R8
	ADDQ $9344, R9
	DECQ CX
	JNZ  block
	VZEROUPPER
	RET
