//go:build !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// Decode attention over a 16-bit KV cache: attnScores4AVX512 and
// attnWeightedSum4AVX512 with each cached key and value element converted
// from F16 (VCVTPH2PS) or BF16 (zero-extended and shifted into the high
// half) as it is loaded, exactly, so the arithmetic is theirs bit for bit
// on the widened rows, without writing the widened rows anywhere. Strides
// and offsets of k and v are in bytes of 16-bit elements.

// Sixteen 16-bit elements at off bytes from base, under mask k, widened into z.
#define LOAD_F16(off, base, k, z) VCVTPH2PS.Z off(base), k, z
#define LOAD_BF16(off, base, k, z) \
	VPMOVZXWD.Z off(base), k, z; \
	VPSLLD $16, z, z

// Reduce the 16 lanes of z to one float, times X10, stored at off(DI).
#define HSUM_SCALE_STORE(z, y, x, off) \
	VEXTRACTF64X4 $1, z, Y1; \
	VADDPS Y1, y, Y1; \
	VEXTRACTF128 $1, Y1, X2; \
	VADDPS X2, X1, X1; \
	VPSHUFD $0x4e, X1, X2; \
	VADDPS X2, X1, X1; \
	VPSHUFD $0xb1, X1, X2; \
	VADDSS X2, X1, X1; \
	VMULSS X10, X1, X1; \
	VMOVSS X1, off

// SCORES4 is attnScores4AVX512's body with the key loads by load; its
// labels are prefixed by pos and lane (unique per TEXT).
#define SCORES4(load, pos, lane) \
	MOVQ p+0(FP), DI; \
	MOVQ k+16(FP), R10; \
	MOVQ stride+24(FP), R9; \
	MOVQ n+40(FP), R8; \
	VMOVSS scale+48(FP), X10; \
	MOVQ headDim+32(FP), R11; \
	SHLQ $2, R11; \
	MOVQ n+40(FP), R12; \
	SHLQ $2, R12; \
pos: \
	MOVQ q+8(FP), SI; \
	LEAQ (SI)(R11*2), R13; \
	MOVQ R10, DX; \
	MOVQ headDim+32(FP), BX; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
lane: \
	MASK16(BX); \
	load(0, DX, K1, Z0); \
	VMOVUPS.Z (SI), K1, Z3; \
	VMOVUPS.Z (SI)(R11*1), K1, Z4; \
	VMOVUPS.Z (R13), K1, Z5; \
	VMOVUPS.Z (R13)(R11*1), K1, Z6; \
	VFMADD231PS Z0, Z3, Z8; \
	VFMADD231PS Z0, Z4, Z9; \
	VFMADD231PS Z0, Z5, Z11; \
	VFMADD231PS Z0, Z6, Z12; \
	ADDQ $64, SI; \
	ADDQ $64, R13; \
	ADDQ $32, DX; \
	SUBQ $16, BX; \
	JG lane; \
	HSUM_SCALE_STORE(Z8, Y8, X8, (DI)); \
	HSUM_SCALE_STORE(Z9, Y9, X9, (DI)(R12*1)); \
	LEAQ (DI)(R12*2), AX; \
	HSUM_SCALE_STORE(Z11, Y11, X11, (AX)); \
	HSUM_SCALE_STORE(Z12, Y12, X12, (AX)(R12*1)); \
	ADDQ $4, DI; \
	ADDQ R9, R10; \
	DECQ R8; \
	JNZ pos; \
	VZEROUPPER; \
	RET



// Zero the sixteen accumulators Z8-Z23.
#define ZERO16 \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// Store one head's 64 output lanes (Z a-d under K1-K4) at AX, step AX.
#define STORE_HEAD(a, b, c, d) \
	VMOVUPS a, K1, (AX); \
	VMOVUPS b, K2, 64(AX); \
	VMOVUPS c, K3, 128(AX); \
	VMOVUPS d, K4, 192(AX); \
	ADDQ R11, AX

// WSUM4 is attnWeightedSum4AVX512's body with the value loads by load;
// block and pos name its labels.
#define WSUM4(load, block, pos) \
	MOVQ out+0(FP), DI; \
	MOVQ v+16(FP), R10; \
	MOVQ stride+24(FP), R9; \
	MOVQ headDim+32(FP), BX; \
	MOVQ BX, R11; \
	SHLQ $2, R11; \
	MOVQ n+40(FP), R12; \
	SHLQ $2, R12; \
block: \
	MASK16(BX); \
	KMOVW K1, K5; \
	LEAQ -16(BX), R13; \
	MASK16(R13); \
	KMOVW K1, K2; \
	LEAQ -32(BX), R13; \
	MASK16(R13); \
	KMOVW K1, K3; \
	LEAQ -48(BX), R13; \
	MASK16(R13); \
	KMOVW K1, K4; \
	KMOVW K5, K1; \
	MOVQ p+8(FP), SI; \
	LEAQ (SI)(R12*2), R13; \
	MOVQ R10, DX; \
	MOVQ n+40(FP), R8; \
	ZERO16; \
pos: \
	load(0, DX, K1, Z4); \
	load(32, DX, K2, Z5); \
	load(64, DX, K3, Z6); \
	load(96, DX, K4, Z7); \
	VBROADCASTSS (SI), Z0; \
	VBROADCASTSS (SI)(R12*1), Z1; \
	VBROADCASTSS (R13), Z2; \
	VBROADCASTSS (R13)(R12*1), Z3; \
	VFMADD231PS Z0, Z4, Z8; \
	VFMADD231PS Z0, Z5, Z9; \
	VFMADD231PS Z0, Z6, Z10; \
	VFMADD231PS Z0, Z7, Z11; \
	VFMADD231PS Z1, Z4, Z12; \
	VFMADD231PS Z1, Z5, Z13; \
	VFMADD231PS Z1, Z6, Z14; \
	VFMADD231PS Z1, Z7, Z15; \
	VFMADD231PS Z2, Z4, Z16; \
	VFMADD231PS Z2, Z5, Z17; \
	VFMADD231PS Z2, Z6, Z18; \
	VFMADD231PS Z2, Z7, Z19; \
	VFMADD231PS Z3, Z4, Z20; \
	VFMADD231PS Z3, Z5, Z21; \
	VFMADD231PS Z3, Z6, Z22; \
	VFMADD231PS Z3, Z7, Z23; \
	ADDQ $4, SI; \
	ADDQ $4, R13; \
	ADDQ R9, DX; \
	DECQ R8; \
	JNZ pos; \
	MOVQ DI, AX; \
	STORE_HEAD(Z8, Z9, Z10, Z11); \
	STORE_HEAD(Z12, Z13, Z14, Z15); \
	STORE_HEAD(Z16, Z17, Z18, Z19); \
	STORE_HEAD(Z20, Z21, Z22, Z23); \
	ADDQ $256, DI; \
	ADDQ $128, R10; \
	SUBQ $64, BX; \
	JG block; \
	VZEROUPPER; \
	RET

// func attnScores4F16(p, q *float32, k *uint16, stride, headDim, n int, scale float32)
TEXT ·attnScores4F16(SB), NOSPLIT, $0-52
	SCORES4(LOAD_F16, f16Pos, f16Lane)

// func attnScores4BF16(p, q *float32, k *uint16, stride, headDim, n int, scale float32)
TEXT ·attnScores4BF16(SB), NOSPLIT, $0-52
	SCORES4(LOAD_BF16, bf16Pos, bf16Lane)

// func attnWeightedSum4F16(out, p *float32, v *uint16, stride, headDim, n int)
TEXT ·attnWeightedSum4F16(SB), NOSPLIT, $0-48
	WSUM4(LOAD_F16, f16Block, f16WPos)

// func attnWeightedSum4BF16(out, p *float32, v *uint16, stride, headDim, n int)
TEXT ·attnWeightedSum4BF16(SB), NOSPLIT, $0-48
	WSUM4(LOAD_BF16, bf16Block, bf16WPos)
