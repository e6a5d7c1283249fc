//go:build !noasm

package avx512

// HaveQ4KR16 says this build has the interleaved kernel's assembly.
const HaveQ4KR16 = true

// q4kr16Dot: groups groups of 16 interleaved rows, nb super-blocks each,
// against one token's activations (q4kr16_amd64.s).
//
//go:noescape
func q4kr16Dot(w, x *byte, dst *float32, nb, groups int)

// q4kr16DotPf is q4kr16Dot with every weight line prefetched dist bytes
// ahead.
//
//go:noescape
func q4kr16DotPf(w, x *byte, dst *float32, nb, groups, dist int)

// q6kr16Dot: q4kr16Dot's Q6_K twin (q6kr16.go), with every weight line
// prefetched dist bytes ahead when dist > 0.
//
//go:noescape
func q6kr16Dot(w, x *byte, dst *float32, nb, groups, dist int)
