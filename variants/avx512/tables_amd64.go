//go:build !noasm

package avx512

// The constant tables that the generated assembly reads as ·name(SB), with
// loads that need no alignment; variants/_gen describes how each is used.

// opsExp are the constants of exp (ops_amd64.s): Cephes' expf reduction and
// polynomial, then the clamp (VSCALEFPS builds 2^n).
var opsExp = [12]uint32{
	0x3fb8aa3b, 0x3f318000, 0xb95e8083, // log2(e), then ln 2 = c1 + c2 (c1 exact in few bits)
	0x39506967, 0x3ab743ce, 0x3c088908, 0x3d2aa9c1, 0x3e2aaaaa, 0x3f000000, // the polynomial p0-p5
	0x3f800000,             // 1
	0x42c80000, 0xc2d00000, // the clamp, 100 and -104
}

// ropeDup (a VPERMPS index) repeats each cos or sin over its pair of lanes;
// ropeSign flips the sign of each pair's even lane.
var (
	ropeDup  = [16]uint32{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}
	ropeSign = [16]uint32{
		0x80000000, 0, 0x80000000, 0, 0x80000000, 0, 0x80000000, 0,
		0x80000000, 0, 0x80000000, 0, 0x80000000, 0, 0x80000000, 0,
	}
)

// q4kScaleIdx (VPSHUFB) spreads the eight Q4_K sub-block scales over the
// words of the four nibble vectors, q4kxScaleIdx those of q4kRowsVNNIX's
// unpacked scales (index bit 7 zeroes the high bytes); q6kScaleIdx (VPERMW)
// spreads the 16 Q6_K scale words, one a 128-bit lane.
var (
	q4kScaleIdx  = [32]uint64(spreadWords(32, 0x8000, 0x8002, 0x8001, 0x8003, 0x8004, 0x8006, 0x8005, 0x8007))
	q4kxScaleIdx = [32]uint64(spreadWords(32, 0x8000, 0x8002, 0x8001, 0x8003, 0x8008, 0x800a, 0x8009, 0x800b))
	q6kScaleIdx  = [32]uint64(spreadWords(32, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
)

// spreadWords is n 8-byte words in len(words) equal rows: row g is the
// 16-bit words[g] in every word.
func spreadWords(n int, words ...uint64) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = words[i*len(words)/n] * 0x0001000100010001
	}
	return t
}

// q4kMinIdx spreads the 8 Q4_K mins over the words of the 16 bsums (two
// sub-blocks a min), q4kxMinIdx the mins m0-m3 at bytes 4-7 and m4-m7 at
// bytes 12-15 of q4kRowsVNNIX's unpacked scales.
var (
	q4kMinIdx  = [4]uint64{0x8001800180008000, 0x8003800380028002, 0x8005800580048004, 0x8007800780068006}
	q4kxMinIdx = [4]uint64{0x8005800580048004, 0x8007800780068006, 0x800d800d800c800c, 0x800f800f800e800e}
)

// q4kRowsVNNIX's scale unpacking from the dwords [A, B, C, C]: q4kxShift
// shifts the last lane to C's high nibbles; q4kxSel selects the low six
// bits of A and B in lanes 0-1 and the nibbles of C in lanes 2-3, the rest
// of each byte coming from the shifted high bits.
var (
	q4kxShift = [2]uint64{0, 0x0000000400000000}
	q4kxSel   = [2]uint64{0x3f3f3f3f3f3f3f3f, 0x0f0f0f0f0f0f0f0f}
)

// q4k4Pick is q4kRows4VNNI's scale unpacking: the masks of the low bits,
// of the high bits, then the per-dword shift counts.
var q4k4Pick = [12]uint32{
	0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f,
	0x00000000, 0x30303030, 0x00000000, 0x30303030,
	0, 0, 0, 4,
}

// q80Spread (VPERMPS) spreads the scales of a block pair, in lanes 0 and
// 1, over the dwords of the two blocks.
var q80Spread = [16]uint32{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}

// q4kbNibble is the batched Q4_K kernels' low-nibble mask (a broadcast
// operand).
var q4kbNibble uint32 = 0x0f0f0f0f
