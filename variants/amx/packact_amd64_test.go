//go:build !noasm

package amx

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPackActivationsAsm: the assembly packer writes exactly the bytes of
// packActivationsGo (including what sum32 leaves alone) over token counts
// around a pair, super-block counts and both sum modes, and nothing past
// the pack.
func TestPackActivationsAsm(t *testing.T) {
	if !packAsm {
		t.Skip("needs AVX-512 F/BW/VL")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, nb := range []int{1, 3, 9} {
		for _, n := range []int{1, 5, 31, 32, 33, 70} {
			for _, sum32 := range []bool{false, true} {
				t.Run(fmt.Sprintf("nb%d/n%d/sum32=%v", nb, n, sum32), func(t *testing.T) {
					xq := make([]byte, n*nb*q8kBytes)
					for i := range xq {
						xq[i] = byte(rng.Uint32())
					}
					size := (n + pairTokens - 1) / pairTokens * nb * aSBBytes
					want, got := make([]byte, size+64), make([]byte, size+64)
					for i := range want {
						want[i] = byte(rng.Uint32())
					}
					copy(got, want)
					packActivationsGo(want[:size], xq, n, nb, sum32)
					packActivations(got[:size], xq, n, nb, sum32)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("byte %d of %d (super-block %d, offset %d): %#x, want %#x", i, size, i/aSBBytes, i%aSBBytes, got[i], want[i])
					}
				})
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}
