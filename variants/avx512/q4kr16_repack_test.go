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
