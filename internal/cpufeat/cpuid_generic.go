//go:build !amd64 || noasm

package cpufeat

// haveCPUID is false: without the assembly, x86 facts come from
// golang.org/x/sys/cpu, which lacks a few bits (AVX512-FP16, AMX-FP16, the
// XCR0 tile state) and so reports them absent.
const haveCPUID = false

func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32) { return 0, 0, 0, 0 }

func xgetbv(index uint32) (eax, edx uint32) { return 0, 0 }
