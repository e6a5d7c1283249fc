package ledgertest_test

import (
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/naive"
)

// brokenEnv makes this test binary register deliberately broken variants
// and run the suite over them (TestBrokenVariants runs it as a child).
const brokenEnv = "LEDGERTEST_BROKEN"

func init() {
	if os.Getenv(brokenEnv) == "" {
		return
	}
	good := naive.MatVec(quant.Q4_K)
	op := ledger.MatVecOp(quant.Q4_K)
	// Off by a hundredth: the gate's thresholds and the float64 check fail it.
	ledger.Register(ledger.Variant{Op: op, Name: "broken-scale", Family: ledger.FamilyNaive,
		Impl: ledger.MatVec(func(dst []float32, w, xq []byte, k int) {
			good(dst, w, xq, k)
			for i := range dst {
				dst[i] *= 1.01
			}
		})})
	// Right on 8-byte aligned activations, and dies on any other: only the
	// misaligned runs catch it.
	ledger.Register(ledger.Variant{Op: op, Name: "broken-align", Family: ledger.FamilyNaive,
		Impl: ledger.MatVec(func(dst []float32, w, xq []byte, k int) {
			if uintptr(unsafe.Pointer(&xq[0]))%8 != 0 {
				panic("misaligned activations")
			}
			good(dst, w, xq, k)
		})})
	// A batched decode product that is right to float rounding but sums a
	// token's products in another order when it has company: the gate
	// passes it, the op's contract (a token's bits do not depend on the
	// call) fails it.
	goodMM := naive.MatMul(quant.Q4_K)
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "broken-company", Family: ledger.FamilyNaive,
		Impl: ledger.MatMul(func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
			goodMM(dst, ldd, w, rows, xq, n, k)
			if n > 1 {
				dst[0] = math.Nextafter32(dst[0], float32(math.Inf(1)))
			}
		})})
}

func TestBrokenVariantsHelper(t *testing.T) {
	if os.Getenv(brokenEnv) == "" {
		t.Skip("the child of TestBrokenVariants")
	}
	v, _ := ledger.Lookup(ledger.MatVecOp(quant.Q4_K), "broken-scale")
	ledgertest.RunPackage(t, v.Package())
}

// TestBrokenVariants: the suite fails a variant with a wrong result and one
// that cannot take misaligned inputs (in the gate's misaligned runs and
// the deeper checks' misaligned inputs alike), and only at its misaligned
// shapes: the aligned gate runs pass it; and a batched decode product
// whose token results depend on the call's other tokens, which the gate
// alone would pass.
func TestBrokenVariants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child test binary")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenVariantsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed broken variants:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestBrokenVariantsHelper/matvec/q4_k/broken-scale/gate",
		"--- FAIL: TestBrokenVariantsHelper/matvec/q4_k/broken-scale/conformance",
		"--- FAIL: TestBrokenVariantsHelper/matvec/q4_k/broken-align/gate",
		"misaligned: panicked: misaligned activations",
		"--- FAIL: TestBrokenVariantsHelper/matvec/q4_k/broken-align/conformance",
		"matvec/q4_k:broken-align panicked: misaligned activations",
		"--- PASS: TestBrokenVariantsHelper/matvec_batch/q4_k/broken-company/gate",
		"--- FAIL: TestBrokenVariantsHelper/matvec_batch/q4_k/broken-company/conformance",
		"a token's result depends on the call",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "gate, shape") && strings.Contains(line, "panicked") && !strings.Contains(line, "misaligned:") {
			t.Errorf("broken-align failed an aligned gate run: %s", line)
		}
	}
}

func TestRunFailsWithoutVariants(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("the parent's test")
	}
	if v, ok := ledger.Lookup(ledger.MatVecOp(quant.Q4_K), "broken-scale"); ok {
		t.Fatalf("%s registered outside the child", v.ID())
	}
}
