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
// the pack; packing the tokens in ranges split at pairs, in any order,
// writes the same bytes as packing them at once.
func TestPackActivationsAsm(t *testing.T) {
	if !packAsm {
		t.Skip("needs AVX-512 F/BW/VL")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, nb := range []int{1, 3, 9} {
		for _, n := range []int{1, 5, 31, 32, 33, 70, 100} {
			for _, sum32 := range []bool{false, true} {
				t.Run(fmt.Sprintf("nb%d/n%d/sum32=%v", nb, n, sum32), func(t *testing.T) {
					xq := make([]byte, n*nb*q8kBytes)
					for i := range xq {
						xq[i] = byte(rng.Uint32())
					}
					size := activationPackBytes(n, nb)
					want, got := make([]byte, size+64), make([]byte, size+64)
					for i := range want {
						want[i] = byte(rng.Uint32())
					}
					copy(got, want)
					split := append([]byte(nil), want...)
					packActivationsGo(want[:size], xq, 0, n, n, nb, sum32)
					packActivations(got[:size], xq, 0, n, n, nb, sum32)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("byte %d of %d (super-block %d, offset %d): %#x, want %#x", i, size, i/aSBBytes, i%aSBBytes, got[i], want[i])
					}
					// The last range first, then the others back to front.
					for j1 := n; j1 > 0; {
						j0 := (j1 - 1) / pairTokens * pairTokens
						if j0 > 0 && rng.IntN(2) == 0 {
							j0 -= pairTokens // ranges of one and two pairs
						}
						packActivations(split[:size], xq, j0, j1, n, nb, sum32)
						j1 = j0
					}
					if i := firstDiff(split, want); i >= 0 {
						t.Fatalf("packed in ranges: byte %d of %d: %#x, want %#x", i, size, split[i], want[i])
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
