package promoted

import (
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/naive"
)

func TestEmbeddedPreferencesParse(t *testing.T) {
	p, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range p.OpNames() {
		if _, ok := ledger.LookupOp(op); !ok {
			t.Errorf("preferences.json names unknown op %q", op)
		}
	}
}

// fakeRegistry holds the naive rmsnorm plus faster-looking variants: one
// needing a feature the tests pretend is absent, one retired.
func fakeRegistry(t *testing.T) *ledger.Registry {
	r := ledger.NewRegistry()
	for _, v := range []ledger.Variant{
		{Op: ledger.OpRMSNorm, Name: "naive", Family: ledger.FamilyNaive, Impl: ledger.RMSNorm(naive.RMSNorm)},
		{Op: ledger.OpRMSNorm, Name: "fancy", Family: ledger.FamilyAVX512, Features: []string{"avx512fp16"}, Impl: ledger.RMSNorm(naive.RMSNorm)},
		{Op: ledger.OpRMSNorm, Name: "plain", Family: ledger.FamilyGoUnrolled, Impl: ledger.RMSNorm(naive.RMSNorm)},
		{Op: ledger.OpRMSNorm, Name: "old", Family: ledger.FamilyGoUnrolled, Status: ledger.Retired, Impl: ledger.RMSNorm(naive.RMSNorm)},
		{Op: ledger.OpRMSNorm, Name: "coarse", Family: ledger.FamilyGoUnrolled, Precision: ledger.PrecisionBF16, Impl: ledger.RMSNorm(naive.RMSNorm)},
		{Op: ledger.MatVecOp(quant.Q8_0), Name: "naive", Family: ledger.FamilyNaive, Impl: naive.MatVec(quant.Q8_0)},
	} {
		if err := r.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// pretendAbsent makes ledger.HasFeature deny avx512fp16 for the test's duration.
func pretendAbsent(t *testing.T) {
	has := ledger.HasFeature
	ledger.HasFeature = func(name string) bool { return name != "avx512fp16" && has(name) }
	t.Cleanup(func() { ledger.HasFeature = has })
}

func TestResolveTakesFirstAvailable(t *testing.T) {
	pretendAbsent(t)
	r := fakeRegistry(t)
	prefs := Preferences{Ops: map[string][]Choice{
		ledger.OpRMSNorm: {{Variant: "gone"}, {Variant: "old"}, {Variant: "fancy"}, {Variant: "plain"}},
	}}
	d := NewDispatcher(prefs, r, nil)
	v, err := d.Resolve(ledger.OpRMSNorm)
	if err != nil || v.Name != "plain" {
		t.Fatalf("Resolve = %s, %v; want plain (gone unregistered, old retired, fancy lacks a feature)", v.Name, err)
	}
	prefs.Ops[ledger.OpRMSNorm] = prefs.Ops[ledger.OpRMSNorm][:3]
	if v, _ := NewDispatcher(prefs, r, nil).Resolve(ledger.OpRMSNorm); v.Name != "naive" {
		t.Errorf("with no usable preference got %s, want naive", v.Name)
	}
	if got := d.Chosen(); len(got) != 1 || got[0] != "rmsnorm:plain" {
		t.Errorf("Chosen = %v", got)
	}
}

// TestResolveSkipsReducedPrecision: a bf16-precision variant listed first
// is passed over for the op's own precision, yet runs when forced.
func TestResolveSkipsReducedPrecision(t *testing.T) {
	r := fakeRegistry(t)
	prefs := Preferences{Ops: map[string][]Choice{ledger.OpRMSNorm: {{Variant: "coarse"}, {Variant: "plain"}}}}
	if v, err := NewDispatcher(prefs, r, nil).Resolve(ledger.OpRMSNorm); err != nil || v.Name != "plain" {
		t.Errorf("Resolve = %s, %v; want plain (coarse is bf16)", v.Name, err)
	}
	forced := map[string]string{ledger.OpRMSNorm: "coarse"}
	if v, err := NewDispatcher(prefs, r, forced).Resolve(ledger.OpRMSNorm); err != nil || v.Name != "coarse" {
		t.Errorf("forced: Resolve = %s, %v; want coarse", v.Name, err)
	}
}

// TestAttentionBatchAt: the first bf16 preference that runs, else
// naive-bf16; a float32 override does not apply to a bf16 cache.
func TestAttentionBatchAt(t *testing.T) {
	pretendAbsent(t)
	r := ledger.NewRegistry()
	impl := ledger.AttentionBatch(naive.AttentionBatchBF16)
	op := ledger.OpAttentionBatch
	for _, v := range []ledger.Variant{
		{Op: op, Name: "naive", Family: ledger.FamilyNaive, Impl: ledger.AttentionBatch(naive.AttentionBatch)},
		{Op: op, Name: "naive-bf16", Family: ledger.FamilyNaive, Precision: ledger.PrecisionBF16, Impl: impl},
		{Op: op, Name: "fast-bf16", Family: ledger.FamilyAMXBF16, Precision: ledger.PrecisionBF16, Impl: impl},
		{Op: op, Name: "absent-bf16", Family: ledger.FamilyAMXBF16, Precision: ledger.PrecisionBF16, Features: []string{"avx512fp16"}, Impl: impl},
		{Op: op, Name: "fast-f32", Family: ledger.FamilyAVX512, Impl: ledger.AttentionBatch(naive.AttentionBatch)},
	} {
		if err := r.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	chosen := func(prefs []Choice, over map[string]string) string {
		d := NewDispatcher(Preferences{Ops: map[string][]Choice{op: prefs}}, r, over)
		if _, err := d.AttentionBatchAt(ledger.PrecisionBF16); err != nil {
			t.Fatal(err)
		}
		return d.Chosen()[0]
	}
	if got := chosen([]Choice{{Variant: "fast-f32"}, {Variant: "absent-bf16"}, {Variant: "fast-bf16"}}, nil); got != op+":fast-bf16" {
		t.Errorf("with a bf16 preference: %s, want fast-bf16", got)
	}
	if got := chosen([]Choice{{Variant: "fast-f32"}}, nil); got != op+":naive-bf16" {
		t.Errorf("without one: %s, want naive-bf16", got)
	}
	if got := chosen(nil, map[string]string{op: "fast-f32"}); got != op+":naive-bf16" {
		t.Errorf("float32 override: %s, want naive-bf16", got)
	}
	if got := chosen(nil, map[string]string{op: "fast-bf16"}); got != op+":fast-bf16" {
		t.Errorf("bf16 override: %s, want fast-bf16", got)
	}
}

// TestResolveSkipsOtherVendors: an entry limited to one CPU vendor, or to
// one family of it, is skipped elsewhere, and the same variant may be
// listed once per vendor and family.
func TestResolveSkipsOtherVendors(t *testing.T) {
	pretendAbsent(t)
	r := fakeRegistry(t)
	if err := r.Add(ledger.Variant{Op: ledger.OpRMSNorm, Name: "wide", Family: ledger.FamilyGoUnrolled, Impl: ledger.RMSNorm(naive.RMSNorm)}); err != nil {
		t.Fatal(err)
	}
	prefs := Preferences{Ops: map[string][]Choice{
		ledger.OpRMSNorm: {{Variant: "old", CPU: "GenuineIntel"}, {Variant: "wide", CPU: "AuthenticAMD/26"},
			{Variant: "plain", CPU: "GenuineIntel"}, {Variant: "plain", CPU: "AuthenticAMD/25"}, {Variant: "naive"}},
	}}
	d := NewDispatcher(prefs, r, nil)
	for cpu, want := range map[string]string{"GenuineIntel/6": "plain", "GenuineIntel": "plain", "AuthenticAMD/26": "wide",
		"AuthenticAMD/25": "plain", "AuthenticAMD/23": "naive", "AuthenticAMD": "naive", "": "naive"} {
		d.cpu = cpu
		if v, err := d.Resolve(ledger.OpRMSNorm); err != nil || v.Name != want {
			t.Errorf("on %q: Resolve = %s, %v; want %s", cpu, v.Name, err, want)
		}
	}
	twice := []byte(`{"ops":{"rmsnorm":[{"variant":"plain","cpu":"GenuineIntel"},{"variant":"plain","cpu":"GenuineIntel/6"},{"variant":"plain"}]}}`)
	if _, err := ParsePreferences(twice); err != nil {
		t.Errorf("one entry per vendor and family refused: %v", err)
	}
	twice = []byte(`{"ops":{"rmsnorm":[{"variant":"plain","cpu":"GenuineIntel"},{"variant":"plain","cpu":"GenuineIntel"}]}}`)
	if _, err := ParsePreferences(twice); err == nil {
		t.Error("the same variant twice for one vendor accepted")
	}
	for _, bad := range []string{"/26", "AuthenticAMD/", "AuthenticAMD/zen5", "AuthenticAMD/0"} {
		doc := []byte(`{"ops":{"rmsnorm":[{"variant":"plain","cpu":"` + bad + `"}]}}`)
		if _, err := ParsePreferences(doc); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("cpu %q: error %v, want one naming it", bad, err)
		}
	}
	if got := CPUKey("AuthenticAMD", 26); got != "AuthenticAMD/26" {
		t.Errorf("CPUKey = %q", got)
	}
	if got := CPUKey("AuthenticAMD", 0); got != "AuthenticAMD" {
		t.Errorf("CPUKey without a family = %q", got)
	}
}

func TestOverrides(t *testing.T) {
	pretendAbsent(t)
	r := fakeRegistry(t)
	over, err := ParseOverrides("rmsnorm=old, matvec/q8_0=naive")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := NewDispatcher(Preferences{}, r, over).Resolve(ledger.OpRMSNorm); err != nil || v.Name != "old" {
		t.Errorf("override: got %s, %v; want old", v.Name, err)
	}
	for _, bad := range []string{"rmsnorm=fancy", "rmsnorm=nope"} {
		over, _ := ParseOverrides(bad)
		if _, err := NewDispatcher(Preferences{}, r, over).Resolve(ledger.OpRMSNorm); err == nil {
			t.Errorf("override %s: no error", bad)
		}
	}
	if _, err := ParseOverrides("rmsnorm"); err == nil || !strings.Contains(err.Error(), "op=variant") {
		t.Errorf("malformed override: %v", err)
	}
}

func TestMatMulFallsBackToMatVecLoop(t *testing.T) {
	d := NewDispatcher(Preferences{}, fakeRegistry(t), nil)
	mm, err := d.MatMul(quant.Q8_0)
	if err != nil {
		t.Fatal(err)
	}
	const k, rows, n = 64, 3, 2
	w := make([]byte, rows*2*34)
	xq := make([]byte, n*2*34)
	for i := range w {
		w[i] = byte(i%7 + 1)
	}
	for i := range xq {
		xq[i] = byte(i%5 + 1)
	}
	dst := make([]float32, n*rows)
	mm(dst, rows, w, rows, xq, n, k)
	want := make([]float32, n*rows)
	naive.MatMul(quant.Q8_0)(want, rows, w, rows, xq, n, k)
	for i := range dst {
		if dst[i] != want[i] {
			t.Fatalf("dst[%d] = %g, want %g", i, dst[i], want[i])
		}
	}
}

func TestPackageFunctions(t *testing.T) {
	if err := Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, wt := range ledger.WeightTypes {
		if _, err := MatVec(wt); err != nil {
			t.Errorf("MatVec(%s): %v", wt, err)
		}
		if _, err := MatMul(wt); err != nil {
			t.Errorf("MatMul(%s): %v", wt, err)
		}
		if _, err := Quantize(ledger.ActivationType(wt)); err != nil {
			t.Errorf("Quantize(%s): %v", ledger.ActivationType(wt), err)
		}
	}
	if _, err := MatVec(quant.IQ2_XS); err == nil {
		t.Error("MatVec(IQ2_XS): no error")
	}
	if _, err := Dequantize(quant.Q5_K); err != nil {
		t.Errorf("Dequantize(Q5_K) (outside the catalogue): %v", err)
	}
	if RMSNorm() == nil || SiLUMul() == nil || Softmax() == nil || RoPE() == nil || Attention() == nil || AttentionBatch() == nil {
		t.Error("an f32 op resolved to nil")
	}
}

func TestAttentionBatchFallsBackToPerToken(t *testing.T) {
	r := ledger.NewRegistry()
	for _, v := range []ledger.Variant{
		{Op: ledger.OpAttention, Name: "naive", Family: ledger.FamilyNaive, Impl: ledger.Attention(naive.Attention)},
		{Op: ledger.OpAttentionBatch, Name: "naive", Family: ledger.FamilyNaive, Impl: ledger.AttentionBatch(naive.AttentionBatch)},
		{Op: ledger.OpAttentionBatch, Name: "fast", Family: ledger.FamilyAVX512, Impl: ledger.AttentionBatch(naive.AttentionBatch)},
	} {
		if err := r.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDispatcher(Preferences{}, r, nil)
	ledgertest.AttentionBatch(t, d.AttentionBatch())
	if got := d.Chosen(); len(got) != 2 || got[0] != "attention:naive" || got[1] != "attention_batch:per-token(naive)" {
		t.Errorf("Chosen = %v, want the per-token loop over the naive attention", got)
	}
	d = NewDispatcher(Preferences{Ops: map[string][]Choice{ledger.OpAttentionBatch: {{Variant: "fast"}}}}, r, nil)
	d.AttentionBatch()
	if got := d.Chosen(); len(got) != 1 || got[0] != "attention_batch:fast" {
		t.Errorf("Chosen = %v, want the preferred attention_batch:fast", got)
	}
}

// TestPerTokenVariant checks that the incumbent is registered (the
// conformance suite checks it, as every variant of this package) and the
// default dispatcher's batched attention, which loops its attention.
func TestPerTokenVariant(t *testing.T) {
	if _, ok := ledger.Lookup(ledger.OpAttentionBatch, PerTokenName); !ok {
		t.Fatal("per-token attention_batch variant not registered")
	}
	ledgertest.AttentionBatch(t, AttentionBatch())
}

// TestResolveBundles: a bundle's variants come before the ops' lists, but
// only where the whole bundle runs (here: one needing an absent feature
// voids it, ops it does not name keep their lists) and on its vendor; an
// override still wins over it.
func TestResolveBundles(t *testing.T) {
	pretendAbsent(t)
	r := fakeRegistry(t)
	mv := ledger.MatVecOp(quant.Q8_0)
	if err := r.Add(ledger.Variant{Op: mv, Name: "wide", Family: ledger.FamilyGoUnrolled, Impl: naive.MatVec(quant.Q8_0)}); err != nil {
		t.Fatal(err)
	}
	lists := map[string][]Choice{ledger.OpRMSNorm: {{Variant: "old"}, {Variant: "plain"}}, mv: {{Variant: "naive"}}}
	whole := Bundle{Name: "pair", Kernels: map[string]string{ledger.OpRMSNorm: "naive", mv: "wide"}}
	broken := Bundle{Name: "broken", Kernels: map[string]string{ledger.OpRMSNorm: "fancy", mv: "wide"}}
	elsewhere := Bundle{Name: "other", CPU: "NoSuchVendor", Kernels: map[string]string{ledger.OpRMSNorm: "naive", mv: "wide"}}
	// Absent: ruled out where one of its features is present ("always"
	// here), kept where all are absent (avx512fp16, pretended absent).
	withoutAbsent := Bundle{Name: "lacking", Absent: []string{"avx512fp16"}, Kernels: map[string]string{ledger.OpRMSNorm: "naive", mv: "wide"}}
	withPresent := Bundle{Name: "having", Absent: []string{"avx512fp16", "always"}, Kernels: map[string]string{ledger.OpRMSNorm: "naive", mv: "wide"}}
	has := ledger.HasFeature
	ledger.HasFeature = func(name string) bool { return name == "always" || has(name) }
	for _, c := range []struct {
		bundles      []Bundle
		forced       map[string]string
		norm, matvec string
	}{
		{[]Bundle{whole}, nil, "naive", "wide"},
		{[]Bundle{broken}, nil, "plain", "naive"},
		{[]Bundle{broken, whole}, nil, "naive", "wide"},
		{[]Bundle{elsewhere}, nil, "plain", "naive"},
		{[]Bundle{whole}, map[string]string{ledger.OpRMSNorm: "plain"}, "plain", "wide"},
		{[]Bundle{withoutAbsent}, nil, "naive", "wide"},
		{[]Bundle{withPresent}, nil, "plain", "naive"},
	} {
		d := NewDispatcher(Preferences{Ops: lists, Bundles: c.bundles}, r, c.forced)
		n, err1 := d.Resolve(ledger.OpRMSNorm)
		m, err2 := d.Resolve(mv)
		if err1 != nil || err2 != nil || n.Name != c.norm || m.Name != c.matvec {
			t.Errorf("bundles %v, forced %v: %s and %s (%v, %v); want %s and %s", c.bundles, c.forced, n.Name, m.Name, err1, err2, c.norm, c.matvec)
		}
	}
	for _, bad := range []string{
		`{"ops": {}, "bundles": [{"name": "", "kernels": {"rmsnorm": "naive"}}]}`,
		`{"ops": {}, "bundles": [{"name": "x", "kernels": {}}]}`,
		`{"ops": {}, "bundles": [{"name": "x", "kernels": {"rmsnorm": ""}}]}`,
		`{"ops": {}, "bundles": [{"name": "x", "kernels": {"rmsnorm": "a"}}, {"name": "x", "kernels": {"rmsnorm": "b"}}]}`,
		`{"ops": {}, "bundles": [{"name": "x", "kernels": {"rmsnorm": "a"}, "absent": ["avx512"]}]}`,
	} {
		if _, err := ParsePreferences([]byte(bad)); err == nil {
			t.Errorf("ParsePreferences accepted %s", bad)
		}
	}
}

// TestSmallBatchRowsByFamily: the crossover is looked up by vendor and
// family first, then by vendor; an unknown processor gets none.
func TestSmallBatchRowsByFamily(t *testing.T) {
	t.Setenv(SmallBatchEnv, "")
	saved := smallBatchRows
	t.Cleanup(func() { smallBatchRows = saved })
	smallBatchRows = map[string]int{"AuthenticAMD": 128, "AuthenticAMD/26": 32}
	d := NewDispatcher(Preferences{}, fakeRegistry(t), nil)
	for cpu, want := range map[string]int{"AuthenticAMD/26": 32, "AuthenticAMD/25": 128, "AuthenticAMD": 128, "GenuineIntel/6": 0, "": 0} {
		d.cpu = cpu
		if n, err := d.SmallBatchRows(); err != nil || n != want {
			t.Errorf("on %q: SmallBatchRows = %d, %v; want %d", cpu, n, err, want)
		}
	}
}
