// The row loop that this package's matrix-vector kernels share: each is a
// func(dst *float32, rows int, w, xq *byte, n int) that walks the rows of w
// (R2, which the kernel advances) against the same activations xq and
// stores one float32 per row. Their labels are function-scoped: one use
// per TEXT.

// ROWS_ARGS loads the arguments (n by its name in the kernel's signature):
// R0 dst, R1 rows, R2 w, R3 xq, R4 n.
#define ROWS_ARGS(n) \
	MOVD dst+0(FP), R0; \
	MOVD rows+8(FP), R1; \
	MOVD w+16(FP), R2; \
	MOVD xq+24(FP), R3; \
	MOVD n+32(FP), R4

// ROW_START opens a row at the label row: to done when none are left, R5
// the activations.
#define ROW_START \
row: \
	CBZ R1, done; \
	MOVD R3, R5

// ROW_NEXT(f) closes a row: its sum f stored at R0, the next dst, then
// back to row; done returns.
#define ROW_NEXT(f) \
	FMOVS f, (R0); \
	ADD $4, R0; \
	SUB $1, R1, R1; \
	B row; \
done: \
	RET
