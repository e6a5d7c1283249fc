//go:build !noasm

package avx512

//go:noescape
func q6kRowsAVX512(dst *float32, rows int, w, xq *byte, nb int)

//go:noescape
func q6kRowsVNNI(dst *float32, rows int, w, xq *byte, nb int)

// MatVecQ6K computes dst[r] = W[r]·x for Q6_K weights and Q8_K activations
// with AVX-512BW (VPMADDUBSW, VPMADDWD).
func MatVecQ6K(dst []float32, w, xq []byte, k int) {
	if len(dst) == 0 || k < 256 {
		clear(dst)
		return
	}
	q6kRowsAVX512(&dst[0], len(dst), &w[0], &xq[0], k/256)
}

// MatVecQ6KVNNI is MatVecQ6K with the scale multiply-accumulate done by
// AVX512-VNNI's VPDPWSSD.
func MatVecQ6KVNNI(dst []float32, w, xq []byte, k int) {
	if len(dst) == 0 || k < 256 {
		clear(dst)
		return
	}
	q6kRowsVNNI(&dst[0], len(dst), &w[0], &xq[0], k/256)
}
