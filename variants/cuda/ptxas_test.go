package cuda

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	cu "github.com/damascus-llm/damascus/internal/cuda"
)

// kernelResources is one kernel's line of ptxas's resource report.
type kernelResources struct{ regs, stack, spillStores, spillLoads int }

// ptxasResources compiles file (after uses) for sm_90 with ptxas's
// resource report (NVRTC only, no GPU) and returns each of kernels'
// resources; a kernel without a report fails the test, with the log. The
// PTX check of TestKernelsCompile cannot see spills: ptxas makes them.
//
// Each compilation is made unlike any before it (a macro option and a
// device variable named by a fresh number): NVRTC 12.9 and later may answer
// a compilation it has seen from a cache without running ptxas, so without
// its report (session 11's Intel suite: every leg after the first read an
// empty log; session 12: a second compilation of one file in one process
// did too, though its source differed by a comment).
func ptxasResources(t *testing.T, file string, uses []string, kernels ...string) (cu.Compiled, map[string]kernelResources) {
	t.Helper()
	if _, _, _, err := cu.NVRTC(); err != nil {
		t.Skip(err)
	}
	src, err := Source(file, uses...)
	if err != nil {
		t.Fatal(err)
	}
	nonce := strconv.FormatInt(time.Now().UnixNano(), 10)
	src += "\n__device__ int damascus_resource_report_" + nonce + ";\n"
	c, err := cu.Compile(src, file, append(CompileOptions("sm_90"), "--ptxas-options=-v", "-DDAMASCUS_RESOURCE_REPORT="+nonce)...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kernelResources{}
	for _, k := range kernels {
		r, ok := parseResources(c.Log, k)
		if !ok {
			t.Fatalf("%s: no resource report for %s in ptxas's log:\n%s", file, k, c.Log)
		}
		out[k] = r
	}
	return c, out
}

// parseResources reads kernel k's report from a ptxas log.
func parseResources(log, k string) (kernelResources, bool) {
	m := regexp.MustCompile(`Function properties for ` + regexp.QuoteMeta(k) +
		`\n[^\n]*?(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads\n[^\n]*?Used (\d+) registers`).FindStringSubmatch(log)
	var r kernelResources
	if m == nil {
		return r, false
	}
	for i, p := range []*int{&r.stack, &r.spillStores, &r.spillLoads, &r.regs} {
		*p, _ = strconv.Atoi(m[i+1])
	}
	return r, true
}

// requireNoSpills fails on any kernel of file that spills or keeps a
// stack frame, or uses more than maxRegs registers (0: no limit), logs
// each kernel's registers and dynamic shared memory, and returns the
// compilation and the reports.
func requireNoSpills(t *testing.T, file string, uses []string, maxRegs int, kernels ...string) (cu.Compiled, map[string]kernelResources) {
	t.Helper()
	c, res := ptxasResources(t, file, uses, kernels...)
	for _, k := range kernels {
		checkResources(t, k, res[k], maxRegs, false)
	}
	return c, res
}

// checkResources logs kernel k's report and fails on a spill or stack
// frame (unless mayspill) or on more than maxRegs registers (0: no limit).
func checkResources(t *testing.T, k string, r kernelResources, maxRegs int, mayspill bool) {
	t.Helper()
	t.Logf("%s: %d registers, stack %d, spill stores %d, loads %d, %d dynamic shared bytes (sm_90)", k, r.regs, r.stack, r.spillStores, r.spillLoads, dynamicShared(k))
	if r.stack+r.spillStores+r.spillLoads > 0 && !mayspill {
		t.Errorf("%s: %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", k, r.stack, r.spillStores, r.spillLoads)
	}
	if maxRegs > 0 && r.regs > maxRegs {
		t.Errorf("%s: %d registers, more than %d", k, r.regs, maxRegs)
	}
}

// TestPtxasResourcesParse holds the report's parser to a log in NVRTC's
// form, so that a change of form fails here rather than passing vacuously.
func TestPtxasResourcesParse(t *testing.T) {
	log := "ptxas info    : Compiling entry function 'k1' for 'sm_90'\nptxas info    : Function properties for k1\n" +
		"    8 bytes stack frame, 4 bytes spill stores, 2 bytes spill loads\nptxas info    : Used 168 registers, used 1 barriers, 392 bytes cmem[0]\n"
	if r, ok := parseResources(log, "k1"); !ok || r != (kernelResources{regs: 168, stack: 8, spillStores: 4, spillLoads: 2}) {
		t.Fatalf("parsed %+v, %v", r, ok)
	}
	if _, ok := parseResources(log, "k"); ok {
		t.Fatal("a report for k1 read as one for k")
	}
}
