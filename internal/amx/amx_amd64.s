//go:build !noasm

#include "textflag.h"
#include "amx_amd64.h"

// func tileMatmulInt8(cfg *Config, c *int32, a *int8, b *int8)
// tmm0 = C (16×16 int32), tmm1 = A (16×64 int8), tmm2 = B (16×64 int8, VNNI);
// C += A·B. Every row is 64 bytes, so one stride register serves all three.
TEXT ·tileMatmulInt8(SB), NOSPLIT, $0-32
	MOVQ cfg+0(FP), AX
	MOVQ c+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ b+24(FP), DX
	MOVQ $64, CX
	LDTILECFG(AMX_AX)
	TILELOADD(0, AMX_SI, AMX_CX)
	TILELOADD(1, AMX_DI, AMX_CX)
	TILELOADD(2, AMX_DX, AMX_CX)
	TDPBSSD(0, 1, 2)
	TILESTORED(0, AMX_SI, AMX_CX)
	TILERELEASE
	RET

// func tileMatmulBF16(cfg *Config, c *float32, a *uint16, b *uint16)
// tmm0 = C (16×16 float32), tmm1 = A (16×32 bf16), tmm2 = B (16×32 bf16, pairs);
// C += A·B. Uses R8–R11 so the REX-extended encodings run in a test too.
TEXT ·tileMatmulBF16(SB), NOSPLIT, $0-32
	MOVQ cfg+0(FP), R8
	MOVQ c+8(FP), R9
	MOVQ a+16(FP), R10
	MOVQ b+24(FP), R11
	MOVQ $64, R12
	LDTILECFG(AMX_R8)
	TILELOADD(5, AMX_R9, AMX_R12)
	TILELOADD(6, AMX_R10, AMX_R12)
	TILELOADD(7, AMX_R11, AMX_R12)
	TDPBF16PS(5, 6, 7)
	TILESTORED(5, AMX_R9, AMX_R12)
	TILERELEASE
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
