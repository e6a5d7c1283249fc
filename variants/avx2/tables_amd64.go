//go:build !noasm

package avx2

// The constant tables that the generated assembly (ops_amd64.s,
// quant_amd64.s) reads as ·name(SB), with loads that need no alignment;
// variants/_gen describes how each is used.

// opsExp are the constants of exp (ops_amd64.s): Cephes' expf reduction and
// polynomial, then the clamp and what the AVX2 form builds 2^n from.
var opsExp = [16]uint32{
	0x3fb8aa3b, 0x3f318000, 0xb95e8083, // log2(e), then ln 2 = c1 + c2 (c1 exact in few bits)
	0x39506967, 0x3ab743ce, 0x3c088908, 0x3d2aa9c1, 0x3e2aaaaa, 0x3f000000, // the polynomial p0-p5
	0x3f800000,             // 1
	0x42b0999a, 0xc2ae999a, // the clamp, 88.3 and -87.3
	0x7f800000, 127, 0xff800000, 0x80000000, // +Inf, the exponent bias, -Inf, the sign bit
}

// tailMask is eight lanes of ones, then eight of zeros: the eight lanes
// from 8-n are the mask of the first n lanes.
var tailMask = [16]uint32{
	0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
}

// ropeDup (a VPERMPS index) repeats each cos or sin over its pair of lanes;
// ropeSign flips the sign of each pair's even lane.
var (
	ropeDup  = [8]uint32{0, 0, 1, 1, 2, 2, 3, 3}
	ropeSign = [8]uint32{0x80000000, 0, 0x80000000, 0, 0x80000000, 0, 0x80000000, 0}
)

// q4kWord and q6kWord are VPSHUFB tables that broadcast word g of a 128-bit
// lane over the 32 (q4kWord) or 16 (q6kWord) bytes of row g; q4kMinIdx
// spreads the 8 Q4_K mins over the words of the 16 bsums (two sub-blocks a
// min; index bit 7 zeroes the high bytes).
var (
	q4kWord   = [32]uint64(spreadWords(32, 0x0100, 0x0302, 0x0504, 0x0706, 0x0908, 0x0b0a, 0x0d0c, 0x0f0e))
	q6kWord   = [16]uint64(spreadWords(16, 0x0100, 0x0302, 0x0504, 0x0706, 0x0908, 0x0b0a, 0x0d0c, 0x0f0e))
	q4kMinIdx = [4]uint64{0x8001800180008000, 0x8003800380028002, 0x8005800580048004, 0x8007800780068006}
)

// q5kBit4 keeps bit 4 of each byte (the Q5_K kernel's fifth bit).
var q5kBit4 = [4]uint64{0x1010101010101010, 0x1010101010101010, 0x1010101010101010, 0x1010101010101010}

// spreadWords is n 8-byte words in len(words) equal rows: row g is the
// 16-bit words[g] in every word.
func spreadWords(n int, words ...uint64) []uint64 {
	t := make([]uint64, n)
	for i := range t {
		t[i] = words[i*len(words)/n] * 0x0001000100010001
	}
	return t
}
