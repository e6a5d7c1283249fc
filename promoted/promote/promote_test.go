package promote

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/naive"
)

// decidePromotions calls Decide with the arguments spelled out, as the
// tests were written against.
func decidePromotions(recs []record.Record, prefs promoted.Preferences, reg *ledger.Registry, rule protocol.Rule,
	ops []string, only, cpu string, cpuOnly bool, b *record.Batch) ([]record.Promotion, promoted.Preferences) {
	return Decide(Request{Recs: recs, Prefs: prefs, Reg: reg, Rule: rule, Ops: ops, Only: only, CPU: cpu, CPUOnly: cpuOnly}, b)
}

// matmulRun is a recorded kernel run of matmul/q4_k variants at one shape,
// each gated and timed at scale × a common sample, and a registry holding
// naive, the matvec loop and tiles.
func matmulRun(t *testing.T, scales map[string]float64) (*record.Batch, *ledger.Registry) {
	t.Helper()
	b := record.NewBatch(time.Now())
	names := make([]string, 0, len(scales))
	for name := range scales {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ns := make([]float64, 10)
		for i := range ns {
			ns[i] = scales[name] * (1000 + 5*float64(i))
		}
		b.Add(record.Record{Kind: record.KindGate, Gate: &gate.Result{Op: "matmul/q4_k", Variant: name, Shape: "3x256x2", Outcome: gate.Pass}})
		b.Add(record.Record{Kind: record.KindKernel, Kernel: &record.Kernel{Op: "matmul/q4_k", Variant: name, Shape: "3x256x2", NsPerOp: ns}})
	}
	reg := ledger.NewRegistry()
	for _, name := range []string{"naive", promoted.MatVecLoopName, "tiles"} {
		if err := reg.Add(ledger.Variant{Op: "matmul/q4_k", Name: name, Family: ledger.FamilyNaive, Impl: naive.MatMul(quant.Q4_K)}); err != nil {
			t.Fatal(err)
		}
	}
	return b, reg
}

// TestMatMulIncumbentIsMatVecLoop: without a preference the engine runs the
// matvec loop, so that is what a matmul challenger must beat.
func TestMatMulIncumbentIsMatVecLoop(t *testing.T) {
	b, reg := matmulRun(t, map[string]float64{"naive": 10, promoted.MatVecLoopName: 1, "tiles": 0.99})
	decisions, prefs := decidePromotions(b.Recs, promoted.Preferences{Ops: map[string][]promoted.Choice{}}, reg,
		protocol.DefaultRule(), nil, "", "", false, record.NewBatch(time.Now()))
	for _, d := range decisions {
		if d.Incumbent != promoted.MatVecLoopName {
			t.Errorf("%s judged against %s", d.Challenger, d.Incumbent)
		}
		if d.Challenger == "tiles" && d.Promote {
			t.Errorf("a 1%% gain with overlapping ranges promoted: %s", d.Reason)
		}
	}
	if len(prefs.Ops["matmul/q4_k"]) != 0 {
		t.Errorf("preferences %+v", prefs.Ops)
	}
}

// TestPromoteForOneVendor: with a vendor, the promoted entry is limited to
// it and an existing entry of the same variant for any CPU stays.
func TestPromoteForOneVendor(t *testing.T) {
	b, reg := matmulRun(t, map[string]float64{promoted.MatVecLoopName: 1, "tiles": 0.5})
	old := promoted.Preferences{Ops: map[string][]promoted.Choice{"matmul/q4_k": {{Variant: "tiles"}}}}
	// The incumbent is the first preference timed: tiles itself, so judge
	// against an empty list and check the vendor, then against one that
	// lists tiles for any CPU and check both entries remain.
	_, prefs := decidePromotions(b.Recs, promoted.Preferences{Ops: map[string][]promoted.Choice{}}, reg,
		protocol.DefaultRule(), nil, "", "GenuineIntel/6", true, record.NewBatch(time.Now()))
	list := prefs.Ops["matmul/q4_k"]
	if len(list) != 1 || list[0].Variant != "tiles" || list[0].CPU != "GenuineIntel" {
		t.Fatalf("preferences %+v", list)
	}
	// An entry for another vendor is no incumbent: the run is judged against
	// the matvec loop and tiles promoted again, for this vendor.
	amd := promoted.Preferences{Ops: map[string][]promoted.Choice{"matmul/q4_k": {{Variant: "tiles", CPU: "AuthenticAMD"}}}}
	decisions, prefs := decidePromotions(b.Recs, amd, reg, protocol.DefaultRule(), nil, "", "GenuineIntel/6", true, record.NewBatch(time.Now()))
	if len(decisions) != 1 || decisions[0].Incumbent != promoted.MatVecLoopName || len(prefs.Ops["matmul/q4_k"]) != 2 {
		t.Errorf("with an AMD-only entry: decisions %+v, preferences %+v", decisions, prefs.Ops["matmul/q4_k"])
	}
	merged := promoted.Preferences{Ops: map[string][]promoted.Choice{"matmul/q4_k": append(list, old.Ops["matmul/q4_k"]...)}}
	data, err := merged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := promoted.ParsePreferences(data); err != nil {
		t.Errorf("a vendor entry beside an any-CPU entry of the same variant: %v", err)
	}
	// Limited to the family: the entry names vendor and family, and an
	// entry for the vendor's other family is no incumbent.
	zen4 := promoted.Preferences{Ops: map[string][]promoted.Choice{"matmul/q4_k": {{Variant: "tiles", CPU: "AuthenticAMD/25"}}}}
	decisions, prefs = Decide(Request{Recs: b.Recs, Prefs: zen4, Reg: reg, Rule: protocol.DefaultRule(), CPU: "AuthenticAMD/26", FamilyOnly: true}, record.NewBatch(time.Now()))
	got := prefs.Ops["matmul/q4_k"]
	if len(decisions) != 1 || decisions[0].Incumbent != promoted.MatVecLoopName || len(got) != 2 || got[0].CPU != "AuthenticAMD/25" || got[1].CPU != "AuthenticAMD/26" {
		t.Errorf("limited to Zen 5 beside a Zen 4 entry: decisions %+v, preferences %+v", decisions, got)
	}
}

// TestPromoteWithinPrecision: a bf16 challenger is judged against the
// incumbent of its class (here naive-bf16, there being no bf16 preference),
// not the float32 one, and a float32 challenger against the float32 one.
func TestPromoteWithinPrecision(t *testing.T) {
	b, reg := matmulRun(t, map[string]float64{"naive": 10, "tiles": 1, "naive-bf16": 5, "fast-bf16": 0.5})
	for _, name := range []string{"naive-bf16", "fast-bf16"} {
		if err := reg.Add(ledger.Variant{Op: "matmul/q4_k", Name: name, Family: ledger.FamilyNaive, Precision: ledger.PrecisionBF16,
			Impl: naive.MatMul(quant.Q4_K)}); err != nil {
			t.Fatal(err)
		}
	}
	prefs := promoted.Preferences{Ops: map[string][]promoted.Choice{"matmul/q4_k": {{Variant: "tiles"}}}}
	decisions, out := decidePromotions(b.Recs, prefs, reg, protocol.DefaultRule(), nil, "", "", false, record.NewBatch(time.Now()))
	judged := map[string]string{}
	for _, d := range decisions {
		judged[d.Challenger] = d.Incumbent
		if d.Challenger == "fast-bf16" && !d.Promote {
			t.Errorf("fast-bf16 (10x naive-bf16) not promoted: %s", d.Reason)
		}
	}
	if judged["fast-bf16"] != "naive-bf16" || judged["naive"] != "tiles" || len(judged) != 2 {
		t.Errorf("challenger → incumbent: %v; want fast-bf16 → naive-bf16, naive → tiles", judged)
	}
	// fast-bf16 beat the bf16 class's fallback, which is not in the list:
	// it goes last (the classes do not compete for a call).
	if list := out.Ops["matmul/q4_k"]; len(list) != 2 || list[0].Variant != "tiles" || list[1].Variant != "fast-bf16" {
		t.Errorf("preferences %+v", list)
	}
}

// TestWinStaysBelowUntimedPreferences: a challenger beats the first
// preference the run timed, not the ones above it that the run left out
// (features hidden to time the kernels of CPUs without them): it goes just
// ahead of the one it beat, not to the front.
func TestWinStaysBelowUntimedPreferences(t *testing.T) {
	b, reg := matmulRun(t, map[string]float64{"naive": 10, "tiles": 1})
	if err := reg.Add(ledger.Variant{Op: "matmul/q4_k", Name: "wide", Family: ledger.FamilyNaive, Impl: naive.MatMul(quant.Q4_K)}); err != nil {
		t.Fatal(err)
	}
	prefs := promoted.Preferences{Ops: map[string][]promoted.Choice{"matmul/q4_k": {{Variant: "wide"}, {Variant: "naive"}}}}
	decisions, out := decidePromotions(b.Recs, prefs, reg, protocol.DefaultRule(), nil, "", "", false, record.NewBatch(time.Now()))
	if len(decisions) != 1 || decisions[0].Challenger != "tiles" || decisions[0].Incumbent != "naive" || !decisions[0].Promote {
		t.Fatalf("decisions %+v", decisions)
	}
	var got []string
	for _, c := range out.Ops["matmul/q4_k"] {
		got = append(got, c.Variant)
	}
	if !slices.Equal(got, []string{"wide", "tiles", "naive"}) {
		t.Errorf("preferences %v, want [wide tiles naive]", got)
	}
}

// TestMatVecBatchIncumbentIsMatVecChunks: without a preference a Batch
// runs the matvec over chunks of rows, so that is what a batched decode
// challenger must beat (not naive, far slower).
func TestMatVecBatchIncumbentIsMatVecChunks(t *testing.T) {
	op := ledger.MatVecBatchOp(quant.Q4_K)
	b := record.NewBatch(time.Now())
	reg := ledger.NewRegistry()
	for name, scale := range map[string]float64{"naive": 10, promoted.MatVecChunksName: 1, "batched": 0.5} {
		ns := make([]float64, 10)
		for i := range ns {
			ns[i] = scale * (1000 + 5*float64(i))
		}
		b.Add(record.Record{Kind: record.KindGate, Gate: &gate.Result{Op: op, Variant: name, Shape: "3x256x1", Outcome: gate.Pass}})
		b.Add(record.Record{Kind: record.KindKernel, Kernel: &record.Kernel{Op: op, Variant: name, Shape: "3x256x1", NsPerOp: ns}})
		if err := reg.Add(ledger.Variant{Op: op, Name: name, Family: ledger.FamilyNaive, Impl: naive.MatMul(quant.Q4_K)}); err != nil {
			t.Fatal(err)
		}
	}
	decisions, prefs := decidePromotions(b.Recs, promoted.Preferences{Ops: map[string][]promoted.Choice{}}, reg,
		protocol.DefaultRule(), nil, "", "", false, record.NewBatch(time.Now()))
	for _, d := range decisions {
		if d.Incumbent != promoted.MatVecChunksName {
			t.Errorf("%s judged against %s", d.Challenger, d.Incumbent)
		}
	}
	if list := prefs.Ops[op]; len(list) != 1 || list[0].Variant != "batched" {
		t.Errorf("preferences %+v", list)
	}
}
