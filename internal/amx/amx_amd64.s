//go:build !noasm

#include "textflag.h"
#include "amx_amd64.h"

// MATMUL_ARGS loads tileMatmulInt8's and tileMatmulBF16's arguments (cfg,
// c, a, b) into four registers, and into s the row stride: every tile row is
// 64 bytes, so one stride register serves all three tiles.
#define MATMUL_ARGS(rcfg, rc, ra, rb, s) \
	MOVQ cfg+0(FP), rcfg; \
	MOVQ c+8(FP), rc; \
	MOVQ a+16(FP), ra; \
	MOVQ b+24(FP), rb; \
	MOVQ $64, s

// ONE_TILE_MATMUL configures the tiles (cfg), loads C, A and B into tiles tc,
// ta, tb, does C += A·B with dot and stores C back; cfg, c, a, b and the
// stride s are AMX register numbers.
#define ONE_TILE_MATMUL(dot, cfg, c, a, b, s, tc, ta, tb) \
	LDTILECFG(cfg); \
	TILELOADD(tc, c, s); \
	TILELOADD(ta, a, s); \
	TILELOADD(tb, b, s); \
	dot(tc, ta, tb); \
	TILESTORED(tc, c, s); \
	TILERELEASE

// func tileMatmulInt8(cfg *Config, c *int32, a *int8, b *int8)
// tmm0 = C (16×16 int32), tmm1 = A (16×64 int8), tmm2 = B (16×64 int8, VNNI).
TEXT ·tileMatmulInt8(SB), NOSPLIT, $0-32
	MATMUL_ARGS(AX, SI, DI, DX, CX)
	ONE_TILE_MATMUL(TDPBSSD, AMX_AX, AMX_SI, AMX_DI, AMX_DX, AMX_CX, 0, 1, 2)
	RET

// func tileMatmulBF16(cfg *Config, c *float32, a *uint16, b *uint16)
// tmm5 = C (16×16 float32), tmm6 = A (16×32 bf16), tmm7 = B (16×32 bf16,
// pairs). Uses R8–R12 so the REX-extended encodings run in a test too.
TEXT ·tileMatmulBF16(SB), NOSPLIT, $0-32
	MATMUL_ARGS(R8, R9, R10, R11, R12)
	ONE_TILE_MATMUL(TDPBF16PS, AMX_R8, AMX_R9, AMX_R10, AMX_R11, AMX_R12, 5, 6, 7)
	RET

// encodingSamples is never executed: amx_test.go disassembles it with GNU
// objdump to check every macro's bytes. It ends with four INT3 bytes.
TEXT ·encodingSamples(SB), NOSPLIT|NOFRAME, $0-0
	LDTILECFG(AMX_AX)
	LDTILECFG(AMX_R15)
	STTILECFG(AMX_DI)
	TILERELEASE
	TILEZERO(0)
	TILEZERO(7)
	TILELOADD(0, AMX_AX, AMX_CX)
	TILELOADD(3, AMX_R8, AMX_R12)
	TILELOADD(7, AMX_R14, AMX_BX)
	TILELOADDT1(2, AMX_SI, AMX_R9)
	TILESTORED(1, AMX_DX, AMX_DI)
	TILESTORED(6, AMX_R15, AMX_R10)
	TDPBSSD(0, 4, 6)
	TDPBSSD(3, 5, 7)
	TDPBSUD(1, 2, 3)
	TDPBUSD(2, 3, 4)
	TDPBUUD(7, 6, 5)
	TDPBF16PS(0, 4, 6)
	TDPFP16PS(1, 5, 7)
	BYTE $0xCC; BYTE $0xCC; BYTE $0xCC; BYTE $0xCC
	RET

// func encodingSamplesAddr() *byte
TEXT ·encodingSamplesAddr(SB), NOSPLIT, $0-8
	LEAQ ·encodingSamples(SB), AX
	MOVQ AX, ret+0(FP)
	RET
