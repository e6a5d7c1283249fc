//go:build !noasm

package amx

import (
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/amx/amxtest"
)

// tileProgram disassembles the kernel at addr with GNU objdump (the test
// binary has no symbol table) and returns its AMX instructions up to its
// TILERELEASE, operands in AT&T order.
func tileProgram(t *testing.T, addr *byte) []string {
	t.Helper()
	code := unsafe.Slice(addr, 32768) // longer than any kernel
	out := amxtest.Objdump(t, code, "--no-show-raw-insn")
	re := regexp.MustCompile(`\t((ldtilecfg|tilezero|tileloadd|tilestored|tdp\w+|tilerelease)\b.*)$`)
	mem := regexp.MustCompile(`\(%\w+,%\w+,1\)`) // the kernels differ in their address registers
	var prog []string
	for _, line := range strings.Split(out, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			prog = append(prog, mem.ReplaceAllString(strings.Join(strings.Fields(m[1]), " "), "(mem)"))
			if m[2] == "tilerelease" {
				return prog
			}
		}
	}
	t.Fatalf("no tilerelease in the first %d bytes of the kernel: %q", len(code), prog)
	return nil
}

// TestTilePrograms pins the opening of each kernel's AMX instruction stream:
// tiles 0-3 accumulate [token tile][digit or row tile], A tiles are tmm4/5
// (activations, the signed operand), B tiles tmm6/7 (weights). On machines
// without AMX this is what checks the bf16 kernel's tile operands.
func TestTilePrograms(t *testing.T) {
	for _, c := range []struct {
		sym, dp string
		addr    *byte
	}{
		{"tileKernel", "tdpbsud", tileKernelAddr()},
		{"tileKernelWR", "tdpbsud", tileKernelWRAddr()},
		{"tileKernelIL", "tdpbsud", tileKernelILAddr()},
		{"bf16Kernel", "tdpbf16ps", bf16KernelAddr()},
	} {
		prog := tileProgram(t, c.addr)
		want := []string{
			"ldtilecfg (%rax)",
			"tilezero %tmm0", "tilezero %tmm1", "tilezero %tmm2", "tilezero %tmm3",
			"tileloadd (mem),%tmm4",
			"tileloadd (mem),%tmm6",
			c.dp + " %tmm6,%tmm4,%tmm0",
			"tileloadd (mem),%tmm7",
			c.dp + " %tmm7,%tmm4,%tmm1",
			"tileloadd (mem),%tmm5",
			c.dp + " %tmm6,%tmm5,%tmm2",
			c.dp + " %tmm7,%tmm5,%tmm3",
		}
		if len(prog) < len(want) {
			t.Fatalf("%s: %d AMX instructions, want at least %d: %q", c.sym, len(prog), len(want), prog)
		}
		for i, w := range want {
			if prog[i] != w {
				t.Fatalf("%s: AMX instruction %d is %q, want %q\nprogram: %q", c.sym, i, prog[i], w, prog[:len(want)])
			}
		}
		if prog[len(prog)-1] != "tilerelease" {
			t.Errorf("%s: last AMX instruction %q, want tilerelease", c.sym, prog[len(prog)-1])
		}
		var stores int
		for _, p := range prog {
			if strings.HasPrefix(p, "tilestored") {
				stores++
			}
		}
		if stores != 4 {
			t.Errorf("%s: %d tilestored, want 4 (one per C tile)", c.sym, stores)
		}
	}
}
