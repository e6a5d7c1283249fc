//go:build !noasm

package avx512

import (
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/rowops"
)

//go:noescape
func q40RowsVNNI(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ4_0VNNI computes dst[r] = W[r]·x for Q4_0 weights and Q8_0
// activations: per pair of blocks the nibbles unpacked in place, VPDPBUSD
// against the activations less VPDPBUSD of 8s (the −8 offset), d_w·d_x
// per block as the Q8_0 kernel (q40_amd64.s).
var MatVecQ4_0VNNI = rowops.BlockMatVec(q40RowsVNNI, 32)

func init() {
	registerMatVec(quant.Q4_0, "avx512-vnni", MatVecQ4_0VNNI,
		"two blocks a step: nibbles unpacked in place (low then high), VPDPBUSD against the Q8_0 activations less VPDPBUSD of 8s, d_w·d_x per block into float lanes (the Q8_0 kernel's epilogue)")
}
