//go:build !noasm

#include "textflag.h"
#include "../../internal/amx/amx_amd64.h"
#include "../avx512/lanes_amd64.h"

// bf16Args fields.
#define B_W0    0
#define B_W1    8
#define B_X     16
#define B_DST   24
#define B_LDD   32
#define B_NSB   40
#define B_N     48
#define B_MASK0 56
#define B_MASK1 64
#define B_CBUF  72
#define B_CFG   80
#define B_FLAGS 88
#define B_PAIR  96

// AVX512-BF16 instructions Go's assembler lacks, encoded with GNU as 2.40:
// vdpbf16ps (%rsi){1to16},%zmm16,%zmm0
#define VDPBF16PS_BCST_SI_0_Z16_Z0 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x06
// vdpbf16ps 0x40(%rsi){1to16},%zmm16,%zmm1
#define VDPBF16PS_BCST_SI_64_Z16_Z1 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x4e; BYTE $0x10
// vdpbf16ps 0x80(%rsi){1to16},%zmm16,%zmm2
#define VDPBF16PS_BCST_SI_128_Z16_Z2 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x56; BYTE $0x20
// vdpbf16ps 0xc0(%rsi){1to16},%zmm16,%zmm3
#define VDPBF16PS_BCST_SI_192_Z16_Z3 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x5e; BYTE $0x30
// vdpbf16ps 0x100(%rsi){1to16},%zmm16,%zmm4
#define VDPBF16PS_BCST_SI_256_Z16_Z4 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x66; BYTE $0x40
// vdpbf16ps 0x140(%rsi){1to16},%zmm16,%zmm5
#define VDPBF16PS_BCST_SI_320_Z16_Z5 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x6e; BYTE $0x50
// vdpbf16ps 0x180(%rsi){1to16},%zmm16,%zmm6
#define VDPBF16PS_BCST_SI_384_Z16_Z6 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x76; BYTE $0x60
// vdpbf16ps 0x1c0(%rsi){1to16},%zmm16,%zmm7
#define VDPBF16PS_BCST_SI_448_Z16_Z7 BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x7e; BYTE $0x70
// vdpbf16ps 0x200(%rsi){1to16},%zmm16,%zmm8
#define VDPBF16PS_BCST_SI_512_Z16_Z8 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x86; BYTE $0x00; BYTE $0x02; BYTE $0x00; BYTE $0x00
// vdpbf16ps 0x240(%rsi){1to16},%zmm16,%zmm9
#define VDPBF16PS_BCST_SI_576_Z16_Z9 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x8e; BYTE $0x40; BYTE $0x02; BYTE $0x00; BYTE $0x00
// vdpbf16ps 0x280(%rsi){1to16},%zmm16,%zmm10
#define VDPBF16PS_BCST_SI_640_Z16_Z10 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x96; BYTE $0x80; BYTE $0x02; BYTE $0x00; BYTE $0x00
// vdpbf16ps 0x2c0(%rsi){1to16},%zmm16,%zmm11
#define VDPBF16PS_BCST_SI_704_Z16_Z11 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0x9e; BYTE $0xc0; BYTE $0x02; BYTE $0x00; BYTE $0x00
// vdpbf16ps 0x300(%rsi){1to16},%zmm16,%zmm12
#define VDPBF16PS_BCST_SI_768_Z16_Z12 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0xa6; BYTE $0x00; BYTE $0x03; BYTE $0x00; BYTE $0x00
// vdpbf16ps 0x340(%rsi){1to16},%zmm16,%zmm13
#define VDPBF16PS_BCST_SI_832_Z16_Z13 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0xae; BYTE $0x40; BYTE $0x03; BYTE $0x00; BYTE $0x00
// vdpbf16ps 0x380(%rsi){1to16},%zmm16,%zmm14
#define VDPBF16PS_BCST_SI_896_Z16_Z14 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0xb6; BYTE $0x80; BYTE $0x03; BYTE $0x00; BYTE $0x00
// vdpbf16ps 0x3c0(%rsi){1to16},%zmm16,%zmm15
#define VDPBF16PS_BCST_SI_960_Z16_Z15 BYTE $0x62; BYTE $0x72; BYTE $0x7e; BYTE $0x50; BYTE $0x52; BYTE $0xbe; BYTE $0xc0; BYTE $0x03; BYTE $0x00; BYTE $0x00
// vcvtne2ps2bf16 %zmm0,%zmm1,%zmm2  (low half from Z0, high half from Z1)
#define VCVTNE2PS2BF16_Z0_Z1_Z2 BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0

#define FLAG_AMX 1
#define FLAG_ACC 4

#define BF_WSB 8192
#define BF_ASB 16384

// One 32-k chunk: A tmm4, tmm5 (token tiles), B tmm6, tmm7 (row tiles),
// C tmm0..3 = [token tile][row tile].
#define BF_CHUNK(ao, wo) \
	TILE_PRODUCTS4(TDPBF16PS, ao(R9), (ao+1024)(R9), wo(R8), wo(R12), AX, AMX_AX, DX, AMX_DX, AMX_CX)

// func bf16Kernel(a *bf16Args)
//
// Two row tiles (w0, w1) × pairs of token tiles over nsb super-blocks of
// bf16 panels; C accumulates in float32 over the whole K block (the scales
// are in the bf16 values), then goes to dst under the row masks.
//
// Registers: DI args, R8 w0 super-block, R12 w1 super-block, R9 activation
// super-block, R10 cbuf, R13 pair base, R14 tokens left, BX dst of the
// pair's first token, R11 super-blocks left.
TEXT ·bf16Kernel(SB), NOSPLIT, $16-8
	MOVQ a+0(FP), DI
	MOVQ B_CBUF(DI), R10
	MOVQ B_X(DI), R13
	MOVQ B_N(DI), R14
	MOVQ B_DST(DI), BX
	MOVQ B_MASK0(DI), AX
	KMOVW AX, K1
	MOVQ B_MASK1(DI), AX
	KMOVW AX, K2
	TESTQ $FLAG_AMX, B_FLAGS(DI)
	JZ   bpair
	MOVQ B_CFG(DI), AX
	LDTILECFG(AMX_AX)

bpair:
	TESTQ $FLAG_AMX, B_FLAGS(DI)
	JZ    bvnni
	MOVQ B_W0(DI), R8
	MOVQ B_W1(DI), R12
	MOVQ R13, R9
	MOVQ B_NSB(DI), R11
	MOVQ $64, CX
	TILEZERO(0)
	TILEZERO(1)
	TILEZERO(2)
	TILEZERO(3)
bsb:
	BF_CHUNK(0, 0)
	BF_CHUNK(2048, 1024)
	BF_CHUNK(4096, 2048)
	BF_CHUNK(6144, 3072)
	BF_CHUNK(8192, 4096)
	BF_CHUNK(10240, 5120)
	BF_CHUNK(12288, 6144)
	BF_CHUNK(14336, 7168)
	ADDQ $BF_WSB, R8
	ADDQ $BF_WSB, R12
	ADDQ $BF_ASB, R9
	DECQ R11
	JNZ  bsb
	TILESTORE4(R10, AMX_R10, 1024, AX, AMX_AX, AMX_CX)
	JMP  bstore

bvnni:
	// VDPBF16PS does the same products: for each (token tile j, row tile
	// i), Z0-Z15 accumulate the 16 token rows over the K block.
	MOVQ BX, save-8(SP)
	MOVQ $0, BX // combo j*2+i
bcombo:
	ZERO_Z0_Z7
	ZERO_Z8_Z15
	MOVQ B_W0(DI), AX
	TESTQ $1, BX
	JZ   brow0
	MOVQ B_W1(DI), AX
brow0:
	MOVQ BX, SI
	SHRQ $1, SI
	SHLQ $10, SI
	ADDQ R13, SI // A: token tile j
	MOVQ B_NSB(DI), R11
	SHLQ $3, R11 // chunks of 32
bchunk:
	MOVQ $16, DX
bpairrow:
	VMOVDQU32 (AX), Z16
	VDPBF16PS_BCST_SI_0_Z16_Z0
	VDPBF16PS_BCST_SI_64_Z16_Z1
	VDPBF16PS_BCST_SI_128_Z16_Z2
	VDPBF16PS_BCST_SI_192_Z16_Z3
	VDPBF16PS_BCST_SI_256_Z16_Z4
	VDPBF16PS_BCST_SI_320_Z16_Z5
	VDPBF16PS_BCST_SI_384_Z16_Z6
	VDPBF16PS_BCST_SI_448_Z16_Z7
	VDPBF16PS_BCST_SI_512_Z16_Z8
	VDPBF16PS_BCST_SI_576_Z16_Z9
	VDPBF16PS_BCST_SI_640_Z16_Z10
	VDPBF16PS_BCST_SI_704_Z16_Z11
	VDPBF16PS_BCST_SI_768_Z16_Z12
	VDPBF16PS_BCST_SI_832_Z16_Z13
	VDPBF16PS_BCST_SI_896_Z16_Z14
	VDPBF16PS_BCST_SI_960_Z16_Z15
	ADDQ $64, AX
	ADDQ $4, SI
	DECQ DX
	JNZ  bpairrow
	ADDQ $1984, SI // next chunk's A tile: 2048 on
	DECQ R11
	JNZ  bchunk
	MOVQ BX, AX
	SHLQ $10, AX
	ADDQ R10, AX
	VMOVUPS Z0, 0(AX)
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, 128(AX)
	VMOVUPS Z3, 192(AX)
	VMOVUPS Z4, 256(AX)
	VMOVUPS Z5, 320(AX)
	VMOVUPS Z6, 384(AX)
	VMOVUPS Z7, 448(AX)
	VMOVUPS Z8, 512(AX)
	VMOVUPS Z9, 576(AX)
	VMOVUPS Z10, 640(AX)
	VMOVUPS Z11, 704(AX)
	VMOVUPS Z12, 768(AX)
	VMOVUPS Z13, 832(AX)
	VMOVUPS Z14, 896(AX)
	VMOVUPS Z15, 960(AX)
	INCQ BX
	CMPQ BX, $4
	JLT  bcombo
	MOVQ save-8(SP), BX

bstore:
	// Tokens t < min(32, left): row tile 0 from cbuf[j][0], row tile 1
	// from cbuf[j][1], 16 floats each.
	MOVQ R14, CX
	CMPQ CX, $32
	JLE  bcount
	MOVQ $32, CX
bcount:
	MOVQ $0, SI // token
	MOVQ B_LDD(DI), DX
bstoretok:
	MOVQ SI, AX
	ANDQ $15, AX
	SHLQ $6, AX      // tt·64
	MOVQ SI, R8
	SHRQ $4, R8
	SHLQ $11, R8     // j·2048
	ADDQ R8, AX
	ADDQ R10, AX
	VMOVUPS (AX), Z0
	VMOVUPS 1024(AX), Z1
	TESTQ $FLAG_ACC, B_FLAGS(DI)
	JZ    bplain
	VMOVUPS.Z (BX), K1, Z2
	VADDPS Z2, Z0, Z0
	VMOVUPS.Z 64(BX), K2, Z3
	VADDPS Z3, Z1, Z1
bplain:
	VMOVUPS Z0, K1, (BX)
	VMOVUPS Z1, K2, 64(BX)
	ADDQ DX, BX
	INCQ SI
	CMPQ SI, CX
	JLT  bstoretok

	ADDQ B_PAIR(DI), R13
	SUBQ $32, R14
	JGT  bpair

	TESTQ $FLAG_AMX, B_FLAGS(DI)
	JZ   bdone
	TILERELEASE
bdone:
	VZEROUPPER
	RET

// func q8kToBF16(dst *byte, src *byte, nb int)
//
// One token's Q8_K row (nb super-blocks) as bf16 values dx·q into A-tile
// rows: 32 values (64 bytes) per chunk, chunks 2048 bytes apart, super-blocks
// BF_ASB apart.
TEXT ·q8kToBF16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
q8sb:
	VBROADCASTSS (SI), Z31
	MOVQ $0, AX
q8chunk:
	VPMOVSXBD 4(SI)(AX*2), Z0
	VPMOVSXBD 20(SI)(AX*2), Z1
	VCVTDQ2PS Z0, Z0
	VCVTDQ2PS Z1, Z1
	VMULPS Z31, Z0, Z0
	VMULPS Z31, Z1, Z1
	VCVTNE2PS2BF16_Z0_Z1_Z2
	MOVQ AX, DX
	SHLQ $7, DX      // chunk·2048
	VMOVDQU32 Z2, (DI)(DX*1)
	ADDQ $16, AX   // 32 values = 2·16 source bytes, AX counts half-chunks
	CMPQ AX, $128
	JLT  q8chunk
	ADDQ $292, SI
	ADDQ $BF_ASB, DI
	DECQ CX
	JNZ  q8sb
	VZEROUPPER
	RET
