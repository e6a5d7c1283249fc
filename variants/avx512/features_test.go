//go:build amd64 && !noasm

package avx512

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// need skips t unless the CPU has every named AVX-512 extension.
func need(t testing.TB, names ...string) {
	t.Helper()
	has := map[string]bool{
		"avx512f":    cpu.X86.HasAVX512F,
		"avx512bw":   cpu.X86.HasAVX512BW,
		"avx512vl":   cpu.X86.HasAVX512VL,
		"avx512vnni": cpu.X86.HasAVX512VNNI,
		"avx512bf16": cpu.X86.HasAVX512BF16,
		"f16c":       cpu.X86.HasAVX2, // every AVX-512 CPU has F16C; x/sys reports none
	}
	for _, n := range names {
		if !has[n] {
			t.Skipf("CPU lacks %s", n)
		}
	}
}
