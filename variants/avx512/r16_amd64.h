// Shared by the interleaved-layout kernels (q4kr16_amd64.s,
// q4kr16m_amd64.s, q40r16_amd64.s) and variants/amx's packer from the layout
// (subr16_amd64.s).

// R6_BUILD turns a Q6_K sub-block of the interleaved layout, its two
// nibble vectors in Z8, Z9 and its top bits in Z10, into its four k-quads
// of 6-bit quants: Z8 (k 0-3), Z11 (4-7), Z9 (8-11), Z12 (12-15). Z31 holds
// 0x0f bytes, Z30 0x30 bytes; Z13 is clobbered.
#define R6_BUILD \
	VPSRLW $4, Z8, Z11; VPANDD Z31, Z8, Z8; VPANDD Z31, Z11, Z11; \
	VPSRLW $4, Z9, Z12; VPANDD Z31, Z9, Z9; VPANDD Z31, Z12, Z12; \
	VPSLLW $4, Z10, Z13; VPTERNLOGD $0xf8, Z30, Z13, Z8; \
	VPSLLW $2, Z10, Z13; VPTERNLOGD $0xf8, Z30, Z13, Z11; \
	VPTERNLOGD $0xf8, Z30, Z10, Z9; \
	VPSRLW $2, Z10, Z13; VPTERNLOGD $0xf8, Z30, Z13, Z12

// R16_GROUPS runs block (one super-block; it steps SI, R8 and R11) nb (CX)
// times for each of the groups (R9) of 16 rows, storing each group's 16
// sums at DX onwards; grp and blk name its labels.
#define R16_GROUPS(grp, blk, block) \
grp: \
	VPXORD Z0, Z0, Z0; \
	MOVQ   DI, R8; \
	MOVQ   CX, R10; \
blk: \
	block; \
	DECQ R10; \
	JNZ  blk; \
	VMOVUPS Z0, (DX); \
	ADDQ    $64, DX; \
	DECQ    R9; \
	JNZ     grp
