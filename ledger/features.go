package ledger

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

// HasFeature reports whether this machine offers a CPU feature named as in
// internal/cpufeat ("avx2", "fma", "avx512f", "avx512bw", "avx512vnni",
// "avx512bf16", "amx-tile", "amx-int8", "amx-bf16", "neon"). Unknown names
// are reported absent, so a variant asking for something this build cannot
// check is never dispatched to.
//
// It is a variable so tests can simulate machines without a feature.
var HasFeature = hostHasFeature

func hostHasFeature(name string) bool {
	switch name {
	case "avx2":
		return cpu.X86.HasAVX2
	case "fma":
		return cpu.X86.HasFMA
	case "avx512f":
		return cpu.X86.HasAVX512F
	case "avx512bw":
		return cpu.X86.HasAVX512BW
	case "avx512vl":
		return cpu.X86.HasAVX512VL
	case "avx512dq":
		return cpu.X86.HasAVX512DQ
	case "avx512vnni":
		return cpu.X86.HasAVX512VNNI
	case "avx512bf16":
		return cpu.X86.HasAVX512BF16
	case "avxvnni":
		return cpu.X86.HasAVXVNNI
	case "f16c":
		// x/sys/cpu does not report F16C separately; every AVX2 CPU has it.
		return cpu.X86.HasAVX2
	// AMX also needs the kernel's permission (arch_prctl); internal/cpufeat
	// asks for it. Here only the CPUID bits are checked.
	case "amx-tile":
		return cpu.X86.HasAMXTile
	case "amx-int8":
		return cpu.X86.HasAMXInt8
	case "amx-bf16":
		return cpu.X86.HasAMXBF16
	case "neon", "asimd":
		return runtime.GOARCH == "arm64"
	}
	return false
}
