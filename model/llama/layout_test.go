package llama

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// layoutPreset has matrices of many dealt chunks a product (the 1B's
// widths, two layers), so rows land at group offsets other than 0 in both
// kernels' layouts.
const layoutPreset = "llama3.2-1b-2l"

// layoutLogitsEnv names the file TestLayoutDecodeHelper writes its logits
// to; unset, the helper skips.
const layoutLogitsEnv = "DAMASCUS_TEST_LAYOUT_LOGITS"

// layoutDecode is the decode both sides of TestLayoutDecode run: a
// 40-token prompt (the matmul's path), 5 more tokens (a batch below the
// matmul's crossover: the batched decode kernel's), then four single
// tokens (the matvec's), their logits.
func layoutDecode(t *testing.T, m *Model) [][]float32 {
	t.Helper()
	c := mustContext(t, m, Options{NCtx: 64, Threads: 2})
	defer c.Close()
	long := make([]int32, 40)
	for i := range long {
		long[i] = int32(1 + 97*i)
	}
	var out [][]float32
	for _, p := range [][]int32{long, {1, 40, 80, 120, 160}} {
		lg, err := c.Eval(p, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), lg...))
	}
	for _, tok := range []int32{5, 77, 300, 9} {
		lg, err := c.Eval([]int32{tok}, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), lg...))
	}
	// Every Q4_K and Q6_K product reads its matrix in the forced layout.
	for _, l := range c.k.linears() {
		if l.layout != nil && len(l.lw) != l.layout.Size(l.w.Rows, l.w.Cols) {
			t.Errorf("%s: %d bytes in layout %s, want %d", l.w.Name, len(l.lw), l.layout.Name, l.layout.Size(l.w.Rows, l.w.Cols))
		}
		if l.blayout != nil && len(l.blw) != l.blayout.Size(l.w.Rows, l.w.Cols) {
			t.Errorf("%s: batched: %d bytes in layout %s, want %d", l.w.Name, len(l.blw), l.blayout.Name, l.blayout.Size(l.w.Rows, l.w.Cols))
		}
		if l.layout != nil && l.blayout == l.layout && &l.lw[0] != &l.blw[0] || l.layout != nil && l.mlayout == l.layout && &l.lw[0] != &l.mlw[0] {
			t.Errorf("%s: two copies of layout %s", l.w.Name, l.layout.Name)
		}
	}
	return out
}

// TestLayoutDecodeHelper is TestLayoutDecode's child: under the
// DAMASCUS_KERNELS it is given, it decodes, checks that the forced
// variants' layouts were built, and writes the logits.
func TestLayoutDecodeHelper(t *testing.T) {
	path := os.Getenv(layoutLogitsEnv)
	if path == "" {
		t.Skip("the child of TestLayoutDecode")
	}
	file, _, _ := synthModel(t, layoutPreset, "Q4_K_M")
	// Loaded as the engine loads it: where every CPU kernel of a weight type
	// reads one layout, its matrices are placed in it alone.
	ld, err := Load(file, LoadOptions{NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Close()
	m := ld.Model
	got := layoutDecode(t, m)
	if ld.Placed.Placement == PlaceHuge {
		for _, mat := range m.matrices() {
			if mat.Data != nil {
				t.Errorf("%s (%s): its stored bytes were kept", mat.Name, mat.Type)
			}
		}
		if _, err := m.NewContext(Options{NCtx: 32, Device: DeviceCUDA}); err == nil || !strings.Contains(err.Error(), "loaded for the CPU") {
			t.Errorf("a GPU context on a model placed in CPU layouts: %v", err)
		}
	} else {
		t.Logf("weights in the file map (%s): no placement in layouts to check", ld.Placed.Notice)
	}
	k, err := resolveKernels(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	has, batched, mat := map[quant.Type]bool{}, false, false
	for _, l := range k.linears() {
		has[l.w.Type] = has[l.w.Type] || l.layout != nil
		batched = batched || l.blayout != nil
		mat = mat || l.mlayout != nil
	}
	if !has[quant.Q4_K] || !has[quant.Q6_K] || !batched || !mat {
		t.Fatalf("matrices with a weight layout by type: %v, batched %v, matmul %v; want Q4_K and Q6_K, and both", has, batched, mat)
	}
	if k.smallRows < 5 || k.smallRows >= 40 {
		t.Fatalf("small batches up to %d rows: the 5-token step would not take the batched decode kernel, or the 40-token prompt would", k.smallRows)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLayoutDecode: with the matvecs, batched decode kernels and matmuls
// of both types forced to variants that read a weight layout built at load (the
// interleaved kernels, with and without prefetch), a decode's logits agree
// with the shipped kernels' to float rounding (cosine ≥ 0.9995, the same
// top-1), in a child process (DAMASCUS_KERNELS is read once a process).
// This preset's random weights amplify summation order: the batched
// product alone through another order (the naive kernel's too) moved the
// prompt's cosine to 0.99992, and all three paths forced give 0.99987 on
// the last tokens (measured 2026-12-04); a layout read wrongly gives
// 0.02-0.6.
func TestLayoutDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child test binary")
	}
	for _, op := range []string{ledger.MatVecOp(quant.Q4_K), ledger.MatVecOp(quant.Q6_K)} {
		if v, ok := ledger.Default.Lookup(op, "avx512-vnni-r16"); !ok || !v.Available() {
			t.Skipf("%s:avx512-vnni-r16 is not here (noasm, another architecture, or no AVX-512 VNNI)", op)
		}
	}
	_, m, _ := synthModel(t, layoutPreset, "Q4_K_M")
	want := layoutDecode(t, m)
	// Each arm: the matvecs and the matmuls (the batched products are
	// avx512-vnni-r16-m4 throughout); the AMX arm where the host has AMX.
	arms := [][3]string{{"avx512-vnni-r16", "avx512-vnni-sub-r16", "avx512-vnni-sub-r16"}, {"avx512-vnni-r16-pf4k", "avx512-vnni-sub-r16", "avx512-vnni-sub-r16"}}
	if v, ok := ledger.Default.Lookup(ledger.MatMulOp(quant.Q6_K), "amx-int8-il-g8-r16"); ok && v.Available() {
		arms = append(arms, [3]string{"avx512-vnni-r16-pf8k", "amx-int8-il-r16", "amx-int8-il-g8-r16"})
	}
	for _, arm := range arms {
		name := arm[0] + "+" + arm[1]
		out := filepath.Join(t.TempDir(), "logits.json")
		cmd := exec.Command(os.Args[0], "-test.run=^TestLayoutDecodeHelper$", "-test.v")
		// The crossover pinned below the 40-token prompt: the prompt takes
		// the matmul, the 5-token steps the batched product.
		cmd.Env = append(os.Environ(), layoutLogitsEnv+"="+out, promoted.SmallBatchEnv+"=16",
			promoted.OverrideEnv+"="+strings.Join([]string{ledger.MatVecOp(quant.Q4_K) + "=" + arm[0], ledger.MatVecOp(quant.Q6_K) + "=" + arm[0],
				ledger.MatVecBatchOp(quant.Q4_K) + "=avx512-vnni-r16-m4", ledger.MatVecBatchOp(quant.Q6_K) + "=avx512-vnni-r16-m4", ledger.MatMulOp(quant.Q4_K) + "=" + arm[1], ledger.MatMulOp(quant.Q6_K) + "=" + arm[2]}, ","))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: child: %v\n%s", name, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]float32
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d tokens' logits, want %d", name, len(got), len(want))
		}
		for i := range want {
			var dot, a, b float64
			best, bestW := 0, 0
			for j := range want[i] {
				dot += float64(got[i][j]) * float64(want[i][j])
				a += float64(got[i][j]) * float64(got[i][j])
				b += float64(want[i][j]) * float64(want[i][j])
				if got[i][j] > got[i][best] {
					best = j
				}
				if want[i][j] > want[i][bestW] {
					bestW = j
				}
			}
			if cos := dot / math.Sqrt(a*b); cos < 0.9995 || best != bestW {
				t.Errorf("%s, token %d: cosine %.7f, top-1 %d vs %d", name, i, cos, best, bestW)
			}
		}
	}
}
