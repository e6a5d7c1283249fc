// The packers from the interleaved layouts (subr16_amd64.s,
// packr16_amd64.s) share their loop.

// R16_PACKER is a packer's text, func(panel, w *byte, n int): consts, then
// body (one super-block of a 16-row group at SI into its panel at DI) n
// times, SI stepping wstep bytes and DI pstep.
#define R16_PACKER(consts, body, wstep, pstep) \
	MOVQ panel+0(FP), DI; MOVQ w+8(FP), SI; MOVQ n+16(FP), CX; \
	consts; \
	TESTQ CX, CX; JZ done; \
loop: \
	body; \
	ADDQ $wstep, SI; ADDQ $pstep, DI; \
	DECQ CX; JNZ loop; \
done: \
	VZEROUPPER; \
	RET
