//go:build !noasm

package amx

import "encoding/binary"

//go:generate go run -C ../_gen . -dir ../amx

// packArgs is packQ4KTiles' argument block.
type packArgs struct {
	panel  *byte
	w      *byte // row 0 of the first super-block
	nsb    int
	mask   uint64 // valid rows
	consts *[16][64]byte
	idx    [16]int32 // row r at r·rowBytes
	wmask  uint64    // two bits (words) per valid row
	next   *byte     // the …Pf forms' prefetch target (nil: none)
}

// newPackArgs are the packArgs of rows (≤ 16) rows of nb super-blocks
// (blkBytes each) from w, the first super-block's row 0: nsb of them into
// panel, with the constants consts, prefetching next (nil: none; the …Pf
// packers only).
func newPackArgs(panel, w []byte, rows, nb, blkBytes, nsb int, consts *[16][64]byte, next *byte) packArgs {
	a := packArgs{panel: &panel[0], w: &w[0], nsb: nsb, mask: 1<<rows - 1, wmask: 1<<(2*rows) - 1, consts: consts, next: next}
	for r := range a.idx {
		a.idx[r] = int32(r * nb * blkBytes)
	}
	return a
}

//go:noescape
func packQ4KTiles(a *packArgs)

// packQ5KTiles is packQ4KTiles for Q5_K rows (pack_amd64.s).
//
//go:noescape
func packQ5KTiles(a *packArgs)

// packConsts are the vectors packQ4KTiles keeps in Z17-Z30.
var packConsts = func() (c [16][64]byte) {
	for i := 0; i < 64; i++ {
		c[0][i], c[1][i], c[2][i] = 0x3f, 0x0f, 0x30
	}
	for i := 0; i < 64; i += 2 {
		binary.LittleEndian.PutUint16(c[3][i:], 0x007f)
		binary.LittleEndian.PutUint16(c[4][i:], 0x7f00)
		binary.LittleEndian.PutUint16(c[5][i:], 0xff00)
	}
	// Selectors of scale byte j of each dword (within a 128-bit lane):
	// even (b, 0, b, 0) and odd (0, b, 0, b), 0x80 giving zero.
	for j := 0; j < 4; j++ {
		for i := 0; i < 64; i += 4 {
			b := byte(i%16 + j)
			copy(c[6+j][i:], []byte{b, 0x80, b, 0x80})
			copy(c[10+j][i:], []byte{0x80, b, 0x80, b})
		}
	}
	// Selectors of bytes (2b, 2b+1) of each dword into a word pair: the
	// min pairs (m_2h, m_2h+1).
	for b := 0; b < 2; b++ {
		for i := 0; i < 64; i += 4 {
			s := byte(i%16 + 2*b)
			copy(c[14+b][i:], []byte{s, 0x80, s + 1, 0x80})
		}
	}
	return c
}()

// packQ6KConsts are packQ6KTiles' vectors: packConsts with 0x2000 words
// (q6Offset) in place of 0x3f bytes, and two selectors of scale bytes
// (2b, 2b+1) of each dword into the high bytes of a word pair.
var packQ6KConsts = func() (c [16][64]byte) {
	c = packConsts
	for i := 0; i < 64; i += 2 {
		binary.LittleEndian.PutUint16(c[0][i:], q6Offset)
	}
	for b := 0; b < 2; b++ {
		for i := 0; i < 64; i += 4 {
			s := byte(i%16 + 2*b)
			copy(c[14+b][i:], []byte{0x80, s, 0x80, s + 1})
		}
	}
	return c
}()

//go:noescape
func packQ6KTiles(a *packArgs)

// packQ6KAsm is packQ6K by AVX-512.
func packQ6KAsm(panel, w []byte, rows, nb, sb0, nsb int) {
	packQ6KAsmPf(panel, w, rows, nb, sb0, nsb, nil)
}

// packQ6KAsmPf is packQ6KAsm prefetching the next row tile, next (its row
// 0 at super-block sb0; nil: none), a super-block a step.
func packQ6KAsmPf(panel, w []byte, rows, nb, sb0, nsb int, next *byte) {
	a := newPackArgs(panel, w[sb0*q6kBytes:], rows, nb, q6kBytes, nsb, &packQ6KConsts, next)
	packQ6KTiles(&a)
}

// packQ4KAsm is packQ4K by AVX-512 (same layout, same signature).
func packQ4KAsm(panel, w []byte, rows, nb, sb0, nsb int) {
	packQ4KAsmPf(panel, w, rows, nb, sb0, nsb, nil)
}

// packQ4KAsmPf is packQ4KAsm prefetching the next row tile, next (its row
// 0 at super-block sb0; nil: none), a super-block a step.
func packQ4KAsmPf(panel, w []byte, rows, nb, sb0, nsb int, next *byte) {
	a := newPackArgs(panel, w[sb0*q4kBytes:], rows, nb, q4kBytes, nsb, &packConsts, next)
	packQ4KTiles(&a)
}

// packQ5KAsm is packQ5K through packQ5KTiles.
func packQ5KAsm(panel, w []byte, rows, nb, sb0, nsb int) {
	packQ5KAsmPf(panel, w, rows, nb, sb0, nsb, nil)
}

// packQ5KAsmPf is packQ5KAsm prefetching the next row tile, next (its row
// 0 at super-block sb0; nil: none), a super-block a step.
func packQ5KAsmPf(panel, w []byte, rows, nb, sb0, nsb int, next *byte) {
	a := newPackArgs(panel, w[sb0*q5kBytes:], rows, nb, q5kBytes, nsb, &packConsts, next)
	packQ5KTiles(&a)
}
