//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

// q5kHighBit is, per nibble vector of the Q5_K kernels (Q4K_QUANTS's
// order: sub-blocks 0|2, 1|3, 4|6, 5|7, one a 32-byte half), the qh bit
// of that half's sub-block in each byte: VPTESTMB against qh picks the
// quants whose fifth bit is set.
var q5kHighBit = func() (t [32]uint64) {
	for v, subs := range [4][2]uint{{0, 2}, {1, 3}, {4, 6}, {5, 7}} {
		for h, sub := range subs {
			for i := range 4 {
				t[8*v+4*h+i] = 0x0101010101010101 << sub
			}
		}
	}
	return t
}()

// q5kSixteen is the byte 16 in each of four (a VPBROADCASTD operand).
var q5kSixteen uint32 = 0x10101010

//go:noescape
func q5kRowsVNNI(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q5kRowsVNNIPrefetch(dst *float32, rows int, w, xq *byte, nb, dist int)

//go:noescape
func q5kRowsVNNIPrefetchNTA(dst *float32, rows int, w, xq *byte, nb, dist int)

// MatVecQ5KVNNI computes dst[r] = W[r]·x for Q5_K weights and Q8_K
// activations: MatVecQ4KVNNI's products (VPMADDUBSW, VPDPWSSD by the
// sub-block scales, mins from the bsums) over 5-bit quants, the fifth bit
// added to the nibbles by a mask test of qh and a masked byte add.
var MatVecQ5KVNNI = rowops.BlockMatVec(q5kRowsVNNI, 256)

func init() {
	registerMatVec(quant.Q5_K, "avx512-vnni", MatVecQ5KVNNI,
		"avx512-vnni of Q4_K with each quant's fifth bit (qh) added by VPTESTMB and a masked VPADDB before the products")
	registerMatVec(quant.Q5_K, "avx512-vnni-pf4k", matVecPrefetch(q5kRowsVNNIPrefetch, 4<<10),
		"avx512-vnni with PREFETCHT0 of the weight stream 4 KiB ahead")
	registerMatVec(quant.Q5_K, "avx512-vnni-pf8k-nta", matVecPrefetch(q5kRowsVNNIPrefetchNTA, 8<<10),
		"avx512-vnni with PREFETCHNTA of the weight stream 8 KiB ahead (Q4_K's promoted form on AMD)")
}
