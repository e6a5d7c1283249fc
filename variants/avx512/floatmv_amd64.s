//go:build !noasm

#include "textflag.h"

// Float matrix-vector products (F32, F16, BF16 weights with activations of
// the same type), one row at a time: four 16-lane accumulators over 64
// values per step, then 16 (BF16 dot: 32) values per step under a K-mask for
// the tail, so any k works and nothing past a row is read.

// K1 = the low min(cnt, lim) bits; clobbers AX, CX.
#define MASKN(cnt, lim) \
	MOVQ cnt, CX; \
	MOVQ $lim, AX; \
	CMPQ CX, AX; \
	CMOVQGT AX, CX; \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVD AX, K1

#define HSUM_STORE \
	VADDPS Z9, Z8, Z8; \
	VADDPS Z11, Z10, Z10; \
	VADDPS Z10, Z8, Z8; \
	VEXTRACTF64X4 $1, Z8, Y9; \
	VADDPS Y9, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPS X9, X8, X8; \
	VPSHUFD $0x4e, X8, X9; \
	VADDPS X9, X8, X8; \
	VPSHUFD $0xb1, X8, X9; \
	VADDSS X9, X8, X8; \
	VMOVSS X8, (DX); \
	ADDQ $4, DX

#define ROW_START \
	MOVQ R12, SI; \
	MOVQ R10, DI; \
	MOVQ k+32(FP), BX; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11

#define ARGS(shift) \
	MOVQ dst+0(FP), DX; \
	MOVQ rows+8(FP), R8; \
	MOVQ w+16(FP), R12; \
	MOVQ xq+24(FP), R10; \
	MOVQ k+32(FP), R13; \
	SHLQ $shift, R13

// func f32RowsAVX512(dst *float32, rows int, w, xq *byte, k int)
TEXT ·f32RowsAVX512(SB), NOSPLIT, $0-40
	ARGS(2)
f32Row:
	ROW_START
f32Main:
	CMPQ BX, $64
	JLT f32Tail
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VFMADD231PS (DI), Z0, Z8
	VFMADD231PS 64(DI), Z1, Z9
	VFMADD231PS 128(DI), Z2, Z10
	VFMADD231PS 192(DI), Z3, Z11
	ADDQ $256, SI
	ADDQ $256, DI
	SUBQ $64, BX
	JMP f32Main
f32Tail:
	TESTQ BX, BX
	JLE f32Store
	MASKN(BX, 16)
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DI), K1, Z1
	VFMADD231PS Z1, Z0, Z8
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, BX
	JMP f32Tail
f32Store:
	HSUM_STORE
	ADDQ R13, R12
	DECQ R8
	JNZ f32Row
	VZEROUPPER
	RET

// func f16RowsAVX512(dst *float32, rows int, w, xq *byte, k int)
TEXT ·f16RowsAVX512(SB), NOSPLIT, $0-40
	ARGS(1)
f16Row:
	ROW_START
f16Main:
	CMPQ BX, $64
	JLT f16Tail
	VCVTPH2PS (SI), Z0
	VCVTPH2PS 32(SI), Z1
	VCVTPH2PS 64(SI), Z2
	VCVTPH2PS 96(SI), Z3
	VCVTPH2PS (DI), Z4
	VCVTPH2PS 32(DI), Z5
	VCVTPH2PS 64(DI), Z6
	VCVTPH2PS 96(DI), Z7
	VFMADD231PS Z4, Z0, Z8
	VFMADD231PS Z5, Z1, Z9
	VFMADD231PS Z6, Z2, Z10
	VFMADD231PS Z7, Z3, Z11
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $64, BX
	JMP f16Main
f16Tail:
	TESTQ BX, BX
	JLE f16Store
	MASKN(BX, 16)
	VCVTPH2PS.Z (SI), K1, Z0
	VCVTPH2PS.Z (DI), K1, Z1
	VFMADD231PS Z1, Z0, Z8
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $16, BX
	JMP f16Tail
f16Store:
	HSUM_STORE
	ADDQ R13, R12
	DECQ R8
	JNZ f16Row
	VZEROUPPER
	RET

// bf16 → f32 is a 16-bit shift into the high half of each lane.
#define BF16_LOAD(off, src, dstz) \
	VPMOVZXWD off(src), dstz; \
	VPSLLD $16, dstz, dstz

// func bf16RowsAVX512(dst *float32, rows int, w, xq *byte, k int)
TEXT ·bf16RowsAVX512(SB), NOSPLIT, $0-40
	ARGS(1)
bf16Row:
	ROW_START
bf16Main:
	CMPQ BX, $64
	JLT bf16Tail
	BF16_LOAD(0, SI, Z0)
	BF16_LOAD(32, SI, Z1)
	BF16_LOAD(64, SI, Z2)
	BF16_LOAD(96, SI, Z3)
	BF16_LOAD(0, DI, Z4)
	BF16_LOAD(32, DI, Z5)
	BF16_LOAD(64, DI, Z6)
	BF16_LOAD(96, DI, Z7)
	VFMADD231PS Z4, Z0, Z8
	VFMADD231PS Z5, Z1, Z9
	VFMADD231PS Z6, Z2, Z10
	VFMADD231PS Z7, Z3, Z11
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $64, BX
	JMP bf16Main
bf16Tail:
	TESTQ BX, BX
	JLE bf16Store
	MASKN(BX, 16)
	VPMOVZXWD.Z (SI), K1, Z0
	VPMOVZXWD.Z (DI), K1, Z1
	VPSLLD $16, Z0, Z0
	VPSLLD $16, Z1, Z1
	VFMADD231PS Z1, Z0, Z8
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $16, BX
	JMP bf16Tail
bf16Store:
	HSUM_STORE
	ADDQ R13, R12
	DECQ R8
	JNZ bf16Row
	VZEROUPPER
	RET

// VDPBF16PS (AVX512_BF16), which Go's assembler lacks: zmm_acc +=
// a.lo·b.lo + a.hi·b.hi per float32 lane. Encodings from GNU as.
#define VDPBF16PS_Z1_Z0_Z8 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xc1
#define VDPBF16PS_Z3_Z2_Z9 BYTE $0x62; BYTE $0x72; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xcb
#define VDPBF16PS_Z5_Z4_Z10 BYTE $0x62; BYTE $0x72; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xd5
#define VDPBF16PS_Z7_Z6_Z11 BYTE $0x62; BYTE $0x72; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xdf

// func bf16RowsDot(dst *float32, rows int, w, xq *byte, k int)
//
// 128 values per step in four VDPBF16PS, then 32 per step under a mask.
// VDPBF16PS flushes bf16 denormals to zero and rounds to nearest even
// regardless of MXCSR.
TEXT ·bf16RowsDot(SB), NOSPLIT, $0-40
	ARGS(1)
dbf16Row:
	ROW_START
dbf16Main:
	CMPQ BX, $128
	JLT dbf16Tail
	VMOVDQU16 (SI), Z0
	VMOVDQU16 (DI), Z1
	VMOVDQU16 64(SI), Z2
	VMOVDQU16 64(DI), Z3
	VMOVDQU16 128(SI), Z4
	VMOVDQU16 128(DI), Z5
	VMOVDQU16 192(SI), Z6
	VMOVDQU16 192(DI), Z7
	VDPBF16PS_Z1_Z0_Z8
	VDPBF16PS_Z3_Z2_Z9
	VDPBF16PS_Z5_Z4_Z10
	VDPBF16PS_Z7_Z6_Z11
	ADDQ $256, SI
	ADDQ $256, DI
	SUBQ $128, BX
	JMP dbf16Main
dbf16Tail:
	TESTQ BX, BX
	JLE dbf16Store
	MASKN(BX, 32)
	VMOVDQU16.Z (SI), K1, Z0
	VMOVDQU16.Z (DI), K1, Z1
	VDPBF16PS_Z1_Z0_Z8
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $32, BX
	JMP dbf16Tail
dbf16Store:
	HSUM_STORE
	ADDQ R13, R12
	DECQ R8
	JNZ dbf16Row
	VZEROUPPER
	RET
