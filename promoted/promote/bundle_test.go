package promote

import (
	"strings"
	"testing"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/naive"
)

// abRun is a recorded engine A/B: the promoted kernels at 100 tok/s and an
// arm "one" forcing matvec/q4_k=r16 at scale[test] × that (peak-rss: its
// median RSS ratio), gated as gated says ("" none, else the outcome).
func abRun(scale map[string]float64, gated gate.Outcome) []record.Record {
	b := record.NewBatch(time.Now())
	b.Add(record.Record{Kind: record.KindRun, Run: &record.Run{Command: "ab", Protocol: protocol.Record{AB: &protocol.AB{Runs: 10, Threads: 2},
		Engines: []protocol.Engine{{Name: "damascus"}, {Name: "damascus+one", Overrides: "matvec/q4_k=r16"}}}}})
	if gated != "" {
		b.Add(record.Record{Kind: record.KindGate, Gate: &gate.Result{Op: "matvec/q4_k", Variant: "r16", Shape: "16x256", Outcome: gated}})
	}
	for _, test := range []string{"pp16", "tg64", "peak-rss"} {
		for _, eng := range []string{"damascus", "damascus+one"} {
			s, unit := make([]float64, 10), "tok/s"
			base := 100.0
			if test == "peak-rss" {
				base, unit = 1<<30, "B"
			}
			for i := range s {
				s[i] = base * (1 + 0.002*float64(i))
				if eng != "damascus" {
					s[i] *= scale[test]
				}
			}
			b.Add(record.Record{Kind: record.KindE2E, E2E: &record.E2E{Engine: eng, Test: test, Unit: unit, Samples: s}})
		}
	}
	for i := range b.Recs {
		if e := b.Recs[i].E2E; e != nil {
			e.Summary.Median = e.Samples[5]
		}
	}
	return b.Recs
}

func TestDecideBundle(t *testing.T) {
	reg := ledger.NewRegistry()
	if err := reg.Add(ledger.Variant{Op: "matvec/q4_k", Name: "r16", Family: ledger.FamilyNaive, Impl: naive.MatVec(quant.Q4_K)}); err != nil {
		t.Fatal(err)
	}
	old := promoted.Preferences{Ops: map[string][]promoted.Choice{}, Bundles: []promoted.Bundle{
		{Name: "one", CPU: "GenuineIntel", Kernels: map[string]string{"matvec/q4_k": "old"}},
		{Name: "other", Kernels: map[string]string{"matvec/q6_k": "x"}}}}
	for _, c := range []struct {
		name     string
		scale    map[string]float64
		gated    gate.Outcome
		promote  bool
		reason   string
		bundles  int
		firstCPU string
	}{
		{"faster prefill, same decode", map[string]float64{"pp16": 1.3, "tg64": 1, "peak-rss": 1}, gate.Pass, true, "faster at pp16", 3, "GenuineIntel"},
		{"slower decode", map[string]float64{"pp16": 1.3, "tg64": 0.9, "peak-rss": 1}, gate.Pass, false, "slower at tg64", 2, ""},
		{"more memory", map[string]float64{"pp16": 1.3, "tg64": 1, "peak-rss": 1.2}, gate.Pass, false, "peak RSS", 2, ""},
		{"no win", map[string]float64{"pp16": 1.005, "tg64": 1, "peak-rss": 1}, gate.Pass, false, "promotes it at no test", 2, ""},
		{"not gated", map[string]float64{"pp16": 1.3, "tg64": 1, "peak-rss": 1}, "", false, "not gated", 2, ""},
		{"gate failed", map[string]float64{"pp16": 1.3, "tg64": 1, "peak-rss": 1}, gate.Fail, false, "did not pass the gate", 2, ""},
	} {
		p, prefs, err := DecideBundle(BundleRequest{Recs: abRun(c.scale, c.gated), Prefs: old, Reg: reg, Rule: protocol.DefaultRule(), Arm: "one"}, record.NewBatch(time.Now()))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Promote != c.promote || !strings.Contains(p.Reason, c.reason) || len(prefs.Bundles) != c.bundles {
			t.Errorf("%s: promote %v (%s), %d bundles; want %v (%s), %d", c.name, p.Promote, p.Reason, len(prefs.Bundles), c.promote, c.reason, c.bundles)
		}
		if c.promote && (prefs.Bundles[0].Name != "one" || prefs.Bundles[0].CPU != "" || prefs.Bundles[0].Kernels["matvec/q4_k"] != "r16" || prefs.Bundles[1].CPU != c.firstCPU) {
			t.Errorf("%s: bundles %+v", c.name, prefs.Bundles)
		}
	}
	// Limited to the evidence machine's family: the new bundle names vendor
	// and family and goes first; the vendor-wide bundle of the same name stays.
	_, prefs, err := DecideBundle(BundleRequest{Recs: abRun(map[string]float64{"pp16": 1.3, "tg64": 1, "peak-rss": 1}, gate.Pass), Prefs: old, Reg: reg,
		Rule: protocol.DefaultRule(), Arm: "one", CPU: "GenuineIntel/6", FamilyOnly: true}, record.NewBatch(time.Now()))
	if err != nil || len(prefs.Bundles) != 3 || prefs.Bundles[0].CPU != "GenuineIntel/6" || prefs.Bundles[1].CPU != "GenuineIntel" {
		t.Errorf("promoted for one family: %v, bundles %+v", err, prefs.Bundles)
	}
	// Absent: only features the run's machine recorded absent.
	recs := abRun(map[string]float64{"pp16": 1.3, "tg64": 1, "peak-rss": 1}, gate.Pass)
	recs[0].Run.Protocol.Machine.CPU.Features = []cpufeat.Feature{{Name: "avx512f", Present: false}, {Name: "avx2", Present: true}}
	_, prefs, err = DecideBundle(BundleRequest{Recs: recs, Prefs: old, Reg: reg, Rule: protocol.DefaultRule(), Arm: "one", Absent: []string{"avx512f"}}, record.NewBatch(time.Now()))
	if err != nil || len(prefs.Bundles[0].Absent) != 1 || prefs.Bundles[0].Absent[0] != "avx512f" || len(prefs.Bundles) != 3 {
		t.Errorf("promoted without avx512f: %v, bundles %+v", err, prefs.Bundles)
	}
	for _, f := range []string{"avx2", "amx-tile"} {
		if _, _, err := DecideBundle(BundleRequest{Recs: recs, Prefs: old, Reg: reg, Rule: protocol.DefaultRule(), Arm: "one", Absent: []string{f}}, record.NewBatch(time.Now())); err == nil {
			t.Errorf("a bundle limited to processors without %s, which the run's machine had or did not record, was judged", f)
		}
	}
	if _, _, err := DecideBundle(BundleRequest{Recs: abRun(nil, gate.Pass), Reg: reg, Rule: protocol.DefaultRule(), Arm: "two"}, record.NewBatch(time.Now())); err == nil {
		t.Error("an arm the run does not have was judged")
	}
	if len(old.Bundles[0].Kernels) != 1 || old.Bundles[0].Kernels["matvec/q4_k"] != "old" {
		t.Errorf("the caller's preferences changed: %+v", old.Bundles)
	}
}

// TestPairedSummary: the arm's tok/s over the promoted kernels' round by
// round, sorted: a round where the machine ran slow for both cancels out.
func TestPairedSummary(t *testing.T) {
	recs := []record.Record{
		{Kind: record.KindE2E, E2E: &record.E2E{Engine: "damascus", Test: "tg64", Samples: []float64{10, 20, 10}}},
		{Kind: record.KindE2E, E2E: &record.E2E{Engine: "damascus+x", Test: "tg64", Samples: []float64{11, 22, 9}}},
		{Kind: record.KindE2E, E2E: &record.E2E{Engine: "damascus+x", Test: "peak-rss", Samples: []float64{1, 1, 1}}},
		{Kind: record.KindE2E, E2E: &record.E2E{Engine: "damascus+y", Test: "tg64", Samples: []float64{1, 1, 1}}},
	}
	got := PairedSummary(recs, "x")
	if len(got) != 1 || got[0] != "tg64     paired by round: median 1.100×, 0.900–1.100 over 3 rounds" {
		t.Errorf("PairedSummary = %q", got)
	}
}
