//go:build !amd64 || noasm

package avx512

// HaveQ4KR16 says this build has the interleaved kernel's assembly.
const HaveQ4KR16 = false

func q4kr16Dot(w, x *byte, dst *float32, nb, groups int) {
	panic("avx512: q4kr16Dot needs the amd64 assembly")
}

func q4kr16DotPf(w, x *byte, dst *float32, nb, groups, dist int) {
	panic("avx512: q4kr16DotPf needs the amd64 assembly")
}

func q6kr16Dot(w, x *byte, dst *float32, nb, groups, dist int) {
	panic("avx512: q6kr16Dot needs the amd64 assembly")
}

func q4kr16DotM4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q4kr16DotM4 needs the amd64 assembly")
}

func q6kr16DotM4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q6kr16DotM4 needs the amd64 assembly")
}

func q4kr16F8(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q4kr16F8 needs the amd64 assembly")
}

func q4kr16F4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q4kr16F4 needs the amd64 assembly")
}

func q4kr16F1(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q4kr16F1 needs the amd64 assembly")
}

func q6kr16F8(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q6kr16F8 needs the amd64 assembly")
}

func q6kr16F4(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q6kr16F4 needs the amd64 assembly")
}

func q6kr16F1(w, x *byte, xstride int, dst *float32, ldd, nb, groups int) {
	panic("avx512: q6kr16F1 needs the amd64 assembly")
}
