//go:build !noasm

package amx

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/amx/amxtest"
)

// wantSamples is GNU objdump's AT&T rendering of encodingSamples, in order.
var wantSamples = []string{
	"ldtilecfg (%rax)",
	"ldtilecfg (%r15)",
	"sttilecfg (%rdi)",
	"tilerelease",
	"tilezero %tmm0",
	"tilezero %tmm7",
	"tileloadd (%rax,%rcx,1),%tmm0",
	"tileloadd (%r8,%r12,1),%tmm3",
	"tileloadd (%r14,%rbx,1),%tmm7",
	"tileloaddt1 (%rsi,%r9,1),%tmm2",
	"tilestored %tmm1,(%rdx,%rdi,1)",
	"tilestored %tmm6,(%r15,%r10,1)",
	"tdpbssd %tmm6,%tmm4,%tmm0",
	"tdpbssd %tmm7,%tmm5,%tmm3",
	"tdpbsud %tmm3,%tmm2,%tmm1",
	"tdpbusd %tmm4,%tmm3,%tmm2",
	"tdpbuud %tmm5,%tmm6,%tmm7",
	"tdpbf16ps %tmm6,%tmm4,%tmm0",
	"tdpfp16ps %tmm7,%tmm5,%tmm1",
}

// TestEncodingsDisassemble checks the BYTE macros by disassembling the
// assembled samples with GNU objdump; no AMX hardware is needed.
func TestEncodingsDisassemble(t *testing.T) {
	code := unsafe.Slice(encodingSamplesAddr(), 512)
	end := bytes.Index(code, []byte{0xCC, 0xCC, 0xCC, 0xCC})
	if end < 0 {
		t.Fatal("end marker of encodingSamples not found")
	}
	out := amxtest.Objdump(t, code[:end])
	// Lines look like "   0:\tc4 e2 78 49 00       \tldtilecfg (%rax)".
	line := regexp.MustCompile(`^\s*[0-9a-f]+:\t[0-9a-f ]+\t(.*)$`)
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			got = append(got, strings.Join(strings.Fields(m[1]), " "))
		}
	}
	if strings.Join(got, "\n") != strings.Join(wantSamples, "\n") {
		t.Fatalf("disassembly differs:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantSamples, "\n"))
	}
}
