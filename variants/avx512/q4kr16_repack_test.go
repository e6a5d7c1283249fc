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

// quantRepacks are the word-wise repacks of a row's quants into a group
// beside their byte-wise oracles: the group bytes they write, the block
// bytes they read.
var quantRepacks = []struct {
	name         string
	group, block int
	words, bytes func([]byte, int, []byte)
}{
	{"q4_k", 32 * 64, 128, q4kR16Quants, q4kR16QuantsBytes},
	{"q6_k", 16 * 192, 210, q6kR16Quants, q6kR16QuantsBytes},
}

// The word-wise repacks write the bytes the byte-wise ones do, for every
// row slot of a group and random blocks.
func TestR16QuantRepacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, q := range quantRepacks {
		for trial := range 50 {
			want, got := make([]byte, q.group), make([]byte, q.group)
			for r := range 16 {
				blk := make([]byte, q.block)
				for i := range blk {
					blk[i] = byte(rng.UintN(256))
				}
				q.bytes(want, r, blk)
				q.words(got, r, blk)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s trial %d: the word-wise repack differs", q.name, trial)
			}
		}
	}
}

func BenchmarkR16QuantRepack(b *testing.B) {
	for _, q := range quantRepacks {
		group, blk := make([]byte, q.group), make([]byte, q.block)
		for _, v := range []struct {
			name string
			f    func([]byte, int, []byte)
		}{{"words", q.words}, {"bytes", q.bytes}} {
			b.Run("op="+q.name+"/variant="+v.name, func(b *testing.B) {
				b.SetBytes(int64(q.block))
				for i := range b.N {
					v.f(group, i&15, blk)
				}
			})
		}
	}
}
