// Intel AMX instructions as BYTE sequences for the Go assembler, which has no
// AMX mnemonics. Include from a .s file:
//
//	#include "../../internal/amx/amx_amd64.h"   (path relative to that file)
//
// Every AMX instruction is VEX-encoded: C4 [R̄X̄B̄ 00010] [W v̄v̄v̄v̄ L pp] opcode ModRM [SIB]
//   - map 0F38 (mmmmm = 00010); W = 0; L = 0 (128-bit); R̄ X̄ B̄ v̄v̄v̄v̄ are stored inverted.
//   - pp selects the instruction within an opcode: 00 = none, 01 = 66, 10 = F3, 11 = F2.
// Tile registers are tmm0..tmm7 (0..7). General registers are given by number
// (AMX_AX ... AMX_R15 below). Each encoding was checked with GNU objdump 2.40,
// and amx_test.go re-checks them whenever objdump is installed.
//
// Register restrictions (all memory forms use ModRM mod=00 with a SIB byte):
//   - base must not be BP or R13 (mod=00 with base 101 means "disp32, no base");
//   - index must not be SP (SIB index 100 means "no index"); R12 is fine.
// LDTILECFG/STTILECFG take a plain [base] operand, so base must also not be
// SP or R12 (they would need a SIB byte).
//
// Tile state belongs to the OS thread: keep LDTILECFG ... TILERELEASE inside
// ONE assembly function, and call cpufeat.AMX() (permission) before any of it.

#define AMX_AX  0
#define AMX_CX  1
#define AMX_DX  2
#define AMX_BX  3
#define AMX_SP  4
#define AMX_BP  5
#define AMX_SI  6
#define AMX_DI  7
#define AMX_R8  8
#define AMX_R9  9
#define AMX_R10 10
#define AMX_R11 11
#define AMX_R12 12
#define AMX_R13 13
#define AMX_R14 14
#define AMX_R15 15

// VEX byte 1 for a memory operand: R̄ = 1 (tile regs < 8), X̄ from index, B̄ from base, map 0F38.
#define AMX_VEX1(base, index) $(0x82 | ((1-((index)>>3))<<6) | ((1-((base)>>3))<<5))
// VEX byte 1 for a [base] operand without index.
#define AMX_VEX1B(base) $(0xC2 | ((1-((base)>>3))<<5))
// VEX byte 2: W=0, v̄v̄v̄v̄ = ~vreg, L=0, pp.
#define AMX_VEX2(vreg, pp) $(((15-(vreg))<<3) | (pp))

// LDTILECFG [base]            VEX.128.NP.0F38.W0 49 /0       C4 E2 78 49 00  (base=AX)
// Loads the 64-byte tile configuration (palette, rows and bytes per row of each tile).
#define LDTILECFG(base) BYTE $0xC4; BYTE AMX_VEX1B(base); BYTE $0x78; BYTE $0x49; BYTE $((base)&7)

// STTILECFG [base]            VEX.128.66.0F38.W0 49 /0       C4 E2 79 49 00  (base=AX)
#define STTILECFG(base) BYTE $0xC4; BYTE AMX_VEX1B(base); BYTE $0x79; BYTE $0x49; BYTE $((base)&7)

// TILERELEASE                 VEX.128.NP.0F38.W0 49 C0       C4 E2 78 49 C0
// Returns all tiles to the init state (and lets XSAVE skip them).
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0

// TILEZERO tmm                VEX.128.F2.0F38.W0 49 11:rrr:000   C4 E2 7B 49 C0+8*tmm
#define TILEZERO(t) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $(0xC0 | ((t)<<3))

// TILELOADD tmm, [base+index*1]   VEX.128.F2.0F38.W0 4B /r (SIB)  C4 E2 7B 4B 04+8*tmm SIB
// Loads rows of the tile from base + row*index (index = row stride in bytes).
#define TILELOADD(t, base, index) BYTE $0xC4; BYTE AMX_VEX1(base, index); BYTE $0x7B; BYTE $0x4B; BYTE $(0x04 | ((t)<<3)); BYTE $((((index)&7)<<3) | ((base)&7))

// TILELOADDT1 tmm, [base+index*1] VEX.128.66.0F38.W0 4B /r (SIB)  C4 E2 79 4B ...
// As TILELOADD, with a hint that the data will not be reused soon.
#define TILELOADDT1(t, base, index) BYTE $0xC4; BYTE AMX_VEX1(base, index); BYTE $0x79; BYTE $0x4B; BYTE $(0x04 | ((t)<<3)); BYTE $((((index)&7)<<3) | ((base)&7))

// TILESTORED [base+index*1], tmm  VEX.128.F3.0F38.W0 4B /r (SIB)  C4 E2 7A 4B 04+8*tmm SIB
#define TILESTORED(t, base, index) BYTE $0xC4; BYTE AMX_VEX1(base, index); BYTE $0x7A; BYTE $0x4B; BYTE $(0x04 | ((t)<<3)); BYTE $((((index)&7)<<3) | ((base)&7))

// Dot products: dst += a · b, with ModRM.reg = dst, ModRM.rm = a, VEX.vvvv = b.
// Operands follow Intel order (dst, src1, src2); AT&T prints them reversed.
//   int8: a is M×K bytes (4 per dword), b is K/4 rows of N dwords (4 bytes each), dst M×N int32.
// TDPBSSD dst, a, b   signed × signed     VEX.128.F2.0F38.W0 5E 11:dst:a   C4 E2 [~b,11] 5E
#define TDPBSSD(dst, a, b) BYTE $0xC4; BYTE $0xE2; BYTE AMX_VEX2(b, 3); BYTE $0x5E; BYTE $(0xC0 | ((dst)<<3) | (a))
// TDPBSUD dst, a, b   signed × unsigned   VEX.128.F3.0F38.W0 5E
#define TDPBSUD(dst, a, b) BYTE $0xC4; BYTE $0xE2; BYTE AMX_VEX2(b, 2); BYTE $0x5E; BYTE $(0xC0 | ((dst)<<3) | (a))
// TDPBUSD dst, a, b   unsigned × signed   VEX.128.66.0F38.W0 5E
#define TDPBUSD(dst, a, b) BYTE $0xC4; BYTE $0xE2; BYTE AMX_VEX2(b, 1); BYTE $0x5E; BYTE $(0xC0 | ((dst)<<3) | (a))
// TDPBUUD dst, a, b   unsigned × unsigned VEX.128.NP.0F38.W0 5E
#define TDPBUUD(dst, a, b) BYTE $0xC4; BYTE $0xE2; BYTE AMX_VEX2(b, 0); BYTE $0x5E; BYTE $(0xC0 | ((dst)<<3) | (a))
//   bf16: a is M×K bf16 (2 per dword), b is K/2 rows of N dwords (bf16 pairs), dst M×N float32.
// TDPBF16PS dst, a, b                     VEX.128.F3.0F38.W0 5C
#define TDPBF16PS(dst, a, b) BYTE $0xC4; BYTE $0xE2; BYTE AMX_VEX2(b, 2); BYTE $0x5C; BYTE $(0xC0 | ((dst)<<3) | (a))
// TDPFP16PS dst, a, b  (AMX-FP16)         VEX.128.F2.0F38.W0 5C
#define TDPFP16PS(dst, a, b) BYTE $0xC4; BYTE $0xE2; BYTE AMX_VEX2(b, 3); BYTE $0x5C; BYTE $(0xC0 | ((dst)<<3) | (a))

// TILESTORE4 stores tmm0-3 at base, base+step, base+2·step and base+3·step
// (base by name and by AMX number bn; t, AMX number tn, holds the last
// three addresses; sn is the AMX number of the stride register).
#define TILESTORE4(base, bn, step, t, tn, sn) \
	TILESTORED(0, bn, sn); \
	LEAQ step(base), t; \
	TILESTORED(1, tn, sn); \
	LEAQ (2*step)(base), t; \
	TILESTORED(2, tn, sn); \
	LEAQ (3*step)(base), t; \
	TILESTORED(3, tn, sn)

// TILE_PRODUCTS4 is one K chunk of a 2×2 block of tile products with dot:
// C tile 2i+j += A tile 4+i · B tile 6+j. The A tiles come from the
// addresses a0, a1 (through the register ar, AMX number an), the B tiles
// from b0, b1 (through br, bn), the stride from register number sn; each
// load just before the first product that needs it.
#define TILE_PRODUCTS4(dot, a0, a1, b0, b1, ar, an, br, bn, sn) \
	LEAQ a0, ar; \
	TILELOADD(4, an, sn); \
	LEAQ b0, br; \
	TILELOADD(6, bn, sn); \
	dot(0, 4, 6); \
	LEAQ b1, br; \
	TILELOADD(7, bn, sn); \
	dot(1, 4, 7); \
	LEAQ a1, ar; \
	TILELOADD(5, an, sn); \
	dot(2, 5, 6); \
	dot(3, 5, 7)
