//go:build !amd64 || noasm

package avx512

func q4kr16Dot(w, x *byte, dst *float32, nb, groups int) {
	panic("avx512: q4kr16Dot needs the amd64 assembly")
}

func q4kr16DotPf(w, x *byte, dst *float32, nb, groups, dist int) {
	panic("avx512: q4kr16DotPf needs the amd64 assembly")
}
