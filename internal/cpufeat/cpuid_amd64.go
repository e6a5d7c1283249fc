//go:build !noasm

package cpufeat

// haveCPUID reports whether the raw CPUID and XGETBV instructions are
// available to this build.
const haveCPUID = true

func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

func xgetbv(index uint32) (eax, edx uint32)
