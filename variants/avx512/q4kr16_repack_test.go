package avx512

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// q4kR16QuantsBytes is q4kR16Quants spelled out byte by byte (the 256
// values in order, then each line's pairs): the oracle of the word version.
func q4kR16QuantsBytes(lines []byte, r int, qs []byte) {
	var v [256]byte
	for n := range 4 {
		for l, q := range qs[32*n : 32*n+32] {
			v[64*n+l], v[64*n+32+l] = q&15, q>>4
		}
	}
	for s := range 8 {
		for g := range 4 {
			line, sv := lines[(s*4+g)*64+4*r:][:4], v[32*s+4*g:]
			for i := range 4 {
				line[i] = sv[i] | sv[16+i]<<4
			}
		}
	}
}

// The word-wise repack of Q4_K quants writes the bytes the byte-wise one
// does, for every row slot of a group and random quants.
func TestQ4KR16Quants(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 50 {
		want, got := make([]byte, 32*64), make([]byte, 32*64)
		for r := range 16 {
			qs := make([]byte, 128)
			for i := range qs {
				qs[i] = byte(rng.UintN(256))
			}
			q4kR16QuantsBytes(want, r, qs)
			q4kR16Quants(got, r, qs)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d: the word-wise repack differs", trial)
		}
	}
}

func BenchmarkQ4KR16Quants(b *testing.B) {
	lines, qs := make([]byte, 32*64), make([]byte, 128)
	for _, v := range []struct {
		name string
		f    func([]byte, int, []byte)
	}{{"words", q4kR16Quants}, {"bytes", q4kR16QuantsBytes}} {
		b.Run("variant="+v.name, func(b *testing.B) {
			b.SetBytes(128)
			for i := range b.N {
				v.f(lines, i&15, qs)
			}
		})
	}
}

// q6kValues writes the 256 weights of a Q6_K block, as stored (0..63), in
// order: each 128 are 64 bytes of low nibbles (their low, then their high
// halves) joined with 32 bytes of 2-bit tops.
func q6kValues(v *[256]byte, blk []byte) {
	for n := range 2 {
		ql, qh, o := blk[64*n:], blk[128+32*n:], 128*n
		for l := range 32 {
			h := qh[l]
			v[o+l] = ql[l]&15 | (h&3)<<4
			v[o+l+32] = ql[l+32]&15 | (h>>2&3)<<4
			v[o+l+64] = ql[l]>>4 | (h>>4&3)<<4
			v[o+l+96] = ql[l+32]>>4 | (h>>6&3)<<4
		}
	}
}

// q6kR16QuantsBytes is q6kR16Quants spelled out byte by byte from the
// block's 256 values: the oracle of the word version.
func q6kR16QuantsBytes(subs []byte, r int, blk []byte) {
	var v [256]byte
	q6kValues(&v, blk)
	for s := range 16 {
		sub, sv := subs[192*s:][:192], v[16*s:][:16]
		for i := range 4 {
			for h := range 2 {
				sub[64*h+4*r+i] = sv[8*h+i]&15 | (sv[8*h+4+i]&15)<<4
			}
			sub[128+4*r+i] = sv[i]>>4 | sv[4+i]>>4<<2 | sv[8+i]>>4<<4 | sv[12+i]>>4<<6
		}
	}
}

// The word-wise repack of Q6_K quants writes the bytes the byte-wise one
// does, for every row slot of a group and random blocks.
func TestQ6KR16Quants(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for trial := range 50 {
		want, got := make([]byte, 16*192), make([]byte, 16*192)
		for r := range 16 {
			blk := make([]byte, 210)
			for i := range blk {
				blk[i] = byte(rng.UintN(256))
			}
			q6kR16QuantsBytes(want, r, blk)
			q6kR16Quants(got, r, blk)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d: the word-wise repack differs", trial)
		}
	}
}

func BenchmarkQ6KR16Quants(b *testing.B) {
	subs, blk := make([]byte, 16*192), make([]byte, 210)
	for _, v := range []struct {
		name string
		f    func([]byte, int, []byte)
	}{{"words", q6kR16Quants}, {"bytes", q6kR16QuantsBytes}} {
		b.Run("variant="+v.name, func(b *testing.B) {
			b.SetBytes(210)
			for i := range b.N {
				v.f(subs, i&15, blk)
			}
		})
	}
}
