package cuda

import (
	"regexp"
	"strings"
	"testing"

	cu "github.com/damascus-llm/damascus/internal/cuda"
)

// TestKernelsCompile compiles every kernel file with NVRTC where it is
// installed (no GPU needed: DAMASCUS_NVRTC may name a libnvrtc), for
// Hopper machine code and PTX, and checks the PTX for what the kernels
// promise: 16-byte non-coherent weight loads in the matvecs and no local
// memory (a register array indexed at run time, or spills) anywhere.
func TestKernelsCompile(t *testing.T) {
	if _, _, _, err := cu.NVRTC(); err != nil {
		t.Skip(err)
	}
	path, maj, min, _ := cu.NVRTC()
	t.Logf("NVRTC %d.%d at %s", maj, min, path)
	for _, arch := range []string{"compute_90", "sm_90"} {
		comp, err := Compile(arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		for _, f := range sourceFiles {
			c := comp[f.name]
			if c.Log != "" {
				t.Errorf("%s %s: compiler messages:\n%s", arch, f.name, c.Log)
			}
			if arch == "sm_90" && len(c.CUBIN) == 0 {
				t.Errorf("%s %s: no cubin", arch, f.name)
			}
			ptx := string(c.PTX)
			if ptx == "" {
				continue
			}
			for _, k := range f.kernels {
				if !strings.Contains(ptx, ".entry "+k+"(") {
					t.Errorf("%s %s: no kernel %s in the PTX", arch, f.name, k)
				}
			}
			if regexp.MustCompile(`\.local|ld\.local|st\.local`).MatchString(ptx) {
				t.Errorf("%s %s: the PTX uses local memory", arch, f.name)
			}
			if f.name == "matvec.cu" && !strings.Contains(ptx, "ld.global.nc.v4.u32") {
				t.Errorf("%s %s: no 16-byte non-coherent loads in the PTX", arch, f.name)
			}
		}
	}
}
