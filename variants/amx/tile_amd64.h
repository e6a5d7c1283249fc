// Definitions shared by the tile kernels (kernel_amd64.s, kernelwr_amd64.s):
// the pack.go layout offsets, the kernelArgs fields, the AMX products of one
// super-block and the epilogue's per-token steps. Include after
// internal/amx/amx_amd64.h and ../avx512/lanes_amd64.h.

// Offsets of pack.go's layouts.
#define W_D      8192
#define W_DMIN   8256
#define W_COEF   8320
#define W_SB     8832
#define A_D      8192
#define A_BSUMS  8320
#define A_SB     9344

// kernelArgs fields.
#define ARG_W      0
#define ARG_X      8
#define ARG_DST    16
#define ARG_LDD    24
#define ARG_NSB    32
#define ARG_N      40
#define ARG_MASK   48
#define ARG_CBUF   56
#define ARG_ACC    64
#define ARG_CFG    72
#define ARG_FLAGS  80
#define ARG_PAIR   88

#define FLAG_AMX    1
#define FLAG_INTMIN 2
#define FLAG_ACC    4
#define FLAG_LAG    16

// One tile product chunk on AMX: A tiles tmm4, tmm5 (tokens 0-15, 16-31),
// B tiles tmm6 (lo digits), tmm7 (hi digits); C tmm0..3 = [token tile][digit].
// The four chunks of the super-block at wb+wo (weights), ab+ao
// (activations) into zeroed C tiles; clobbers AX, CX, DX.
#define AMX_SUPERBLOCK(wb, wo, ab, ao) \
	MOVQ $64, CX; \
	TILEZERO(0); \
	TILEZERO(1); \
	TILEZERO(2); \
	TILEZERO(3); \
	AMX_CHUNK2(wb, 0+wo, ab, 0+ao); \
	AMX_CHUNK2(wb, 2048+wo, ab, 2048+ao); \
	AMX_CHUNK2(wb, 4096+wo, ab, 4096+ao); \
	AMX_CHUNK2(wb, 6144+wo, ab, 6144+ao)

// Loads interleaved with the products that first need them, in the order
// the previous chunk's products free the tiles (A0 after its second
// product, Blo after its third): tile registers are not renamed, so a
// reload waits for the last reader.
#define AMX_CHUNK2(wb, wo, ab, ao) AMX_CHUNK_R(wb, wo, ab, ao, AX, AMX_AX, DX, AMX_DX, AMX_CX)

// AMX_CHUNK_R is AMX_CHUNK2 with its registers named: activation and weight
// tile addresses in ar and wr (AMX numbers an, wn, which may be the same
// register), the stride 64 in the register numbered sn.
#define AMX_CHUNK_R(wb, wo, ab, ao, ar, an, wr, wn, sn) \
	TILE_PRODUCTS4(TDPBSUD, ao(ab), (ao+1024)(ab), wo(wb), (wo+1024)(wb), ar, an, wr, wn, sn)

// The epilogue's per-token steps shared by its three forms. EPI_DIGITS:
// Z0 = hi<<7 + lo of token t, Z1 = the first four bsum pairs times their
// coefficients; EPI_BSUMS8 adds the other four (sums of 16); EPI_NEXT scales
// Z0 by dx, adds it into acc and steps to the next token (flags set by
// comparing the token offset with the second token tile's).
#define EPI_DIGITS \
	VMOVDQU32 1024(AX), Z0; \
	VPSLLD    $7, Z0, Z0; \
	VPADDD    (AX), Z0, Z0; \
	VPXORD    Z1, Z1, Z1; \
	VPDPWSSD.BCST (A_BSUMS+0)(R9)(SI*1), Z20, Z1; \
	VPDPWSSD.BCST (A_BSUMS+4)(R9)(SI*1), Z21, Z1; \
	VPDPWSSD.BCST (A_BSUMS+8)(R9)(SI*1), Z22, Z1; \
	VPDPWSSD.BCST (A_BSUMS+12)(R9)(SI*1), Z23, Z1

#define EPI_BSUMS8 \
	VPDPWSSD.BCST (A_BSUMS+16)(R9)(SI*1), Z24, Z1; \
	VPDPWSSD.BCST (A_BSUMS+20)(R9)(SI*1), Z25, Z1; \
	VPDPWSSD.BCST (A_BSUMS+24)(R9)(SI*1), Z26, Z1; \
	VPDPWSSD.BCST (A_BSUMS+28)(R9)(SI*1), Z27, Z1

#define EPI_NEXT \
	VMULPS.BCST (DX), Z0, Z0; \
	VADDPS    (R11)(SI*2), Z0, Z0; \
	VMOVUPS   Z0, (R11)(SI*2); \
	ADDQ $64, AX; \
	ADDQ $4, DX; \
	ADDQ $32, SI; \
	CMPQ SI, $512

// The products of one super-block by VPDPBUSD into the 4 KiB cbuf at SI,
// in the layout TILESTORED writes: for each (token tile j, digit x),
// Z0-Z15 hold the 16 token rows of C; each k-quad of B is one load, each
// token's 4 activation bytes an embedded broadcast. Weights at R8,
// activations at R9; keeps SI (through the frame slot cbp-16), clobbers
// AX, BX, CX, DX, Z0-Z16. Its labels are function-scoped: one use per TEXT.
#define VNNI_SUPERBLOCK \
	MOVQ SI, cbp-16(SP); \
	MOVQ $0, BX; \
combo: \
	ZERO_Z0_Z7; \
	ZERO_Z8_Z15; \
	MOVQ BX, AX; \
	ANDQ $1, AX; \
	SHLQ $10, AX; \
	ADDQ R8, AX; \
	MOVQ BX, SI; \
	SHRQ $1, SI; \
	SHLQ $10, SI; \
	ADDQ R9, SI; \
	MOVQ $4, CX; \
vchunk: \
	MOVQ $16, DX; \
vquad: \
	VMOVDQU32 (AX), Z16; \
	VPDPBUSD.BCST 0(SI), Z16, Z0; \
	VPDPBUSD.BCST 64(SI), Z16, Z1; \
	VPDPBUSD.BCST 128(SI), Z16, Z2; \
	VPDPBUSD.BCST 192(SI), Z16, Z3; \
	VPDPBUSD.BCST 256(SI), Z16, Z4; \
	VPDPBUSD.BCST 320(SI), Z16, Z5; \
	VPDPBUSD.BCST 384(SI), Z16, Z6; \
	VPDPBUSD.BCST 448(SI), Z16, Z7; \
	VPDPBUSD.BCST 512(SI), Z16, Z8; \
	VPDPBUSD.BCST 576(SI), Z16, Z9; \
	VPDPBUSD.BCST 640(SI), Z16, Z10; \
	VPDPBUSD.BCST 704(SI), Z16, Z11; \
	VPDPBUSD.BCST 768(SI), Z16, Z12; \
	VPDPBUSD.BCST 832(SI), Z16, Z13; \
	VPDPBUSD.BCST 896(SI), Z16, Z14; \
	VPDPBUSD.BCST 960(SI), Z16, Z15; \
	ADDQ $64, AX; \
	ADDQ $4, SI; \
	DECQ DX; \
	JNZ  vquad; \
	ADDQ $1024, AX; \
	ADDQ $1984, SI; \
	DECQ CX; \
	JNZ  vchunk; \
	MOVQ BX, AX; \
	SHLQ $10, AX; \
	ADDQ cbp-16(SP), AX; \
	VMOVDQU32 Z0, 0(AX); \
	VMOVDQU32 Z1, 64(AX); \
	VMOVDQU32 Z2, 128(AX); \
	VMOVDQU32 Z3, 192(AX); \
	VMOVDQU32 Z4, 256(AX); \
	VMOVDQU32 Z5, 320(AX); \
	VMOVDQU32 Z6, 384(AX); \
	VMOVDQU32 Z7, 448(AX); \
	VMOVDQU32 Z8, 512(AX); \
	VMOVDQU32 Z9, 576(AX); \
	VMOVDQU32 Z10, 640(AX); \
	VMOVDQU32 Z11, 704(AX); \
	VMOVDQU32 Z12, 768(AX); \
	VMOVDQU32 Z13, 832(AX); \
	VMOVDQU32 Z14, 896(AX); \
	VMOVDQU32 Z15, 960(AX); \
	INCQ BX; \
	CMPQ BX, $4; \
	JLT  combo; \
	MOVQ cbp-16(SP), SI

// Epilogue bodies of one token: Q4_K with sums of 32 (four bsum pairs,
// mins by dmin) and Q6_K (eight pairs, one scale d). They end comparing the
// token offset with the second token tile's (EPI_NEXT).
#define EPI32_TOKEN \
	EPI_DIGITS; \
	VCVTDQ2PS Z0, Z0; \
	VCVTDQ2PS Z1, Z1; \
	VMULPS    Z28, Z0, Z0; \
	VFNMADD231PS Z29, Z1, Z0; \
	EPI_NEXT

#define EPIINT_TOKEN \
	EPI_DIGITS; \
	EPI_BSUMS8; \
	VPSUBD    Z1, Z0, Z0; \
	VCVTDQ2PS Z0, Z0; \
	VMULPS    Z28, Z0, Z0; \
	EPI_NEXT

// PF5 prefetches five lines at CX per token of an epilogue and steps CX:
// 32 tokens × 5 lines cover a pair's 8 KiB of tiles and its scales and
// sums (146 lines).
#define PF5 \
	PREFETCHT0 (CX); \
	PREFETCHT0 64(CX); \
	PREFETCHT0 128(CX); \
	PREFETCHT0 192(CX); \
	PREFETCHT0 256(CX); \
	ADDQ $320, CX

#define EPI32_PF_TOKEN PF5; EPI32_TOKEN
#define EPIINT_PF_TOKEN PF5; EPIINT_TOKEN

// EPI_LOOP runs token (a body above, with or without PF5) over the pair's
// 32 tokens, stepping AX to the second token tile's C rows (cbuf+2048)
// after the sixteenth; loop and next name its labels, unique per TEXT.
#define EPI_LOOP(token, loop, next) \
loop: \
	token; \
	JNE  next; \
	ADDQ $1024, AX; \
next: \
	CMPQ SI, $1024; \
	JLT  loop

// ACC_STORE adds or stores (FLAG_ACC) the acc rows at R11 into dst rows at
// BX, DX bytes apart, under the row mask K1, while SI (acc offset, from 0)
// is below CX; loop and plain name its labels.
#define ACC_STORE(loop, plain) \
loop: \
	VMOVUPS (R11)(SI*1), Z0; \
	TESTQ $FLAG_ACC, ARG_FLAGS(DI); \
	JZ    plain; \
	VMOVUPS.Z (BX), K1, Z1; \
	VADDPS Z1, Z0, Z0; \
plain: \
	VMOVUPS Z0, K1, (BX); \
	ADDQ DX, BX; \
	ADDQ $64, SI; \
	CMPQ SI, CX; \
	JLT  loop

// EPI_COEFS loads the epilogue's per-row constants of the weight
// super-block at R8: bsum coefficients Z20-Z27, d Z28, dmin Z29.
#define EPI_COEFS \
	VMOVUPS W_D(R8), Z28; \
	VMOVUPS W_DMIN(R8), Z29; \
	VMOVDQU32 (W_COEF+0)(R8), Z20; \
	VMOVDQU32 (W_COEF+64)(R8), Z21; \
	VMOVDQU32 (W_COEF+128)(R8), Z22; \
	VMOVDQU32 (W_COEF+192)(R8), Z23; \
	VMOVDQU32 (W_COEF+256)(R8), Z24; \
	VMOVDQU32 (W_COEF+320)(R8), Z25; \
	VMOVDQU32 (W_COEF+384)(R8), Z26; \
	VMOVDQU32 (W_COEF+448)(R8), Z27

// ZERO_ALL_PAIRS clears acc (R11 = ARG_ACC) for all ⌈n/32⌉ pairs and keeps
// the pair count in the frame slot pairs-8; clobbers AX, CX, Z0.
#define ZERO_ALL_PAIRS \
	MOVQ ARG_N(DI), CX; \
	ADDQ $31, CX; \
	SHRQ $5, CX; \
	MOVQ CX, pairs-8(SP); \
	SHLQ $11, CX; \
	MOVQ ARG_ACC(DI), R11; \
	VPXORD Z0, Z0, Z0; \
	MOVQ $0, AX; \
zeroacc: \
	VMOVUPS Z0, (R11)(AX*1); \
	ADDQ $64, AX; \
	CMPQ AX, CX; \
	JLT  zeroacc

// TILESTORE_C stores the C tiles tmm0-3 to the 4 KiB at SI in the layout
// the epilogue reads ([token tile][digit], 1 KiB each): t is the address
// register (by name and by AMX number tn), sn the AMX number of the register
// holding the stride 64.
#define TILESTORE_C(t, tn, sn) TILESTORE4(SI, AMX_SI, 1024, t, tn, sn)

// EPI_FORMS runs the epilogue in the form of the weight format (EPI_LOOP
// with token body t32 for Q4_K, tint for Q6_K under FLAG_INTMIN); the Q4_K
// loop jumps to done, the Q6_K loop falls through (callers place done next
// or jump there); the label names are the EPI_LOOPs'.
#define EPI_FORMS(t32, l32, n32, tint, lint, nint, done) \
	TESTQ $FLAG_INTMIN, ARG_FLAGS(DI); \
	JNZ  lint; \
	EPI_LOOP(t32, l32, n32); \
	JMP  done; \
	EPI_LOOP(tint, lint, nint)

// ACC_STORE_ALL stores (or adds) all n accumulated token rows: acc → dst,
// n rows of 16 floats under the row mask (the weight-resident kernels).
#define ACC_STORE_ALL(loop, plain) \
	MOVQ ARG_N(DI), CX; \
	SHLQ $6, CX; \
	MOVQ ARG_ACC(DI), R11; \
	MOVQ ARG_DST(DI), BX; \
	MOVQ ARG_LDD(DI), DX; \
	MOVQ $0, SI; \
	ACC_STORE(loop, plain)

// NEXT_PAIR steps the pair loop (label pair) of kernelwr and kernelil: the
// activations (R9) and acc (R11) to the next pair, R14 pairs left.
#define NEXT_PAIR \
	ADDQ ARG_PAIR(DI), R9; \
	ADDQ $2048, R11; \
	DECQ R14; \
	JNZ  pair

// TILE_RETURN releases the tiles if the kernel used them (FLAG_AMX) and
// returns. Its label is function-scoped: one use per TEXT.
#define TILE_RETURN \
	TESTQ $FLAG_AMX, ARG_FLAGS(DI); \
	JZ   done; \
	TILERELEASE; \
done: \
	VZEROUPPER; \
	RET
