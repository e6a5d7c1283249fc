package e2e

import (
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/protocol"
)

// fakeContender stands for an engine's bench process: in its call n it
// reports, for each test asked, sample k of b.reps as base + 10n + k, and
// records what it was asked and in which order (into order).
func fakeContender(name string, base float64, specs *[]benchSpec, order *[]string) *contender {
	c := &contender{name: name, s: newEngineSamples()}
	c.bench = func(b benchSpec) (*benchOut, *spawned, error) {
		n := float64(len(*specs))
		*specs = append(*specs, b)
		*order = append(*order, name)
		out := &benchOut{tests: map[string][]float64{}}
		for _, t := range b.testNames() {
			for k := range b.reps {
				out.tests[t] = append(out.tests[t], base+10*n+float64(k))
			}
		}
		return out, &spawned{maxRSS: 1 << 20}, nil
	}
	return c
}

// TestInterleavedRoundsReps: each round's process is asked for the
// protocol's repetitions at its depth, and an engine's samples are the
// rounds' repetitions in order (Runs × reps of them), paired with the
// other engine's sample by sample; peak RSS stays one sample a process.
func TestInterleavedRoundsReps(t *testing.T) {
	for _, c := range []struct{ reps, want int }{{0, 1}, {1, 1}, {4, 4}} {
		p := protocol.E2E{PromptTokens: 8, GenTokens: 4, Runs: 3, RepsPerRound: c.reps, Depth: 16, Threads: 1, Interleaved: true}
		var dSpecs, lSpecs []benchSpec
		var order []string
		d := fakeContender("damascus", 200, &dSpecs, &order)
		l := fakeContender("llama.cpp", 100, &lSpecs, &order)
		if err := interleavedRounds([]*contender{d, l}, p, io.Discard, nil); err != nil {
			t.Fatal(err)
		}
		if want := []string{"damascus", "llama.cpp", "llama.cpp", "damascus", "damascus", "llama.cpp"}; !slices.Equal(order, want) {
			t.Errorf("reps %d: processes in order %v, want %v", c.reps, order, want)
		}
		for _, specs := range [][]benchSpec{dSpecs, lSpecs} {
			for _, b := range specs {
				if b.reps != c.want || b.depth != 16 || !slices.Equal(b.prompt, []int{8}) || !slices.Equal(b.gen, []int{4}) {
					t.Errorf("reps %d: a process was asked for %+v, want %d reps at depth 16", c.reps, b, c.want)
				}
			}
		}
		for _, e := range []struct {
			c    *contender
			base float64
		}{{d, 200}, {l, 100}} {
			var want []float64
			for r := range p.Runs {
				for k := range c.want {
					want = append(want, e.base+10*float64(r)+float64(k))
				}
			}
			for _, test := range []string{"pp8@d16", "tg4@d16"} {
				if got := e.c.s.tests[test]; !slices.Equal(got, want) {
					t.Errorf("reps %d: %s %s samples %v, want %v", c.reps, e.c.name, test, got, want)
				}
			}
			if len(e.c.s.rss) != p.Runs {
				t.Errorf("reps %d: %s peak RSS samples %d, want one per process (%d)", c.reps, e.c.name, len(e.c.s.rss), p.Runs)
			}
		}
		// The records keep every sample; the paired ratios divide sample j
		// by sample j (the same round and repetition).
		run := &record.Run{Protocol: protocol.Record{E2E: &p}}
		var recs = map[string]*record.E2E{}
		for _, r := range records(run, []*contender{d, l}).Recs {
			if r.E2E != nil && r.E2E.Test == "tg4@d16" {
				recs[r.E2E.Engine] = r.E2E
			}
		}
		var want []float64
		for r := range p.Runs {
			for k := range c.want {
				x := 10*float64(r) + float64(k)
				want = append(want, (200+x)/(100+x))
			}
		}
		slices.Sort(want)
		if got := record.PairedRatios(recs["damascus"], recs["llama.cpp"]); !reflect.DeepEqual(got, want) {
			t.Errorf("reps %d: paired ratios %v, want %v", c.reps, got, want)
		}
	}
}

// TestInterleavedRoundsShortOfReps: a process that reports fewer samples
// than the repetitions asked stops the run, naming the engine and round,
// rather than leave samples that no longer pair.
func TestInterleavedRoundsShortOfReps(t *testing.T) {
	p := protocol.E2E{GenTokens: 4, Runs: 2, RepsPerRound: 3, Threads: 1}
	var dSpecs, lSpecs []benchSpec
	var order []string
	d := fakeContender("damascus", 200, &dSpecs, &order)
	l := fakeContender("llama.cpp", 100, &lSpecs, &order)
	inner := l.bench
	l.bench = func(b benchSpec) (*benchOut, *spawned, error) {
		b.reps--
		return inner(b)
	}
	err := interleavedRounds([]*contender{d, l}, p, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "llama.cpp round 1: 2 samples of tg4, asked for 3 repetitions") {
		t.Errorf("short process: %v", err)
	}
}

// TestRecordedProtocolReps: one repetition per round (the --reps default)
// is recorded as before the field existed; more are recorded.
func TestRecordedProtocolReps(t *testing.T) {
	before, err := json.Marshal(protocol.DefaultE2E())
	if err != nil {
		t.Fatal(err)
	}
	for reps, same := range map[int]bool{0: true, 1: true, 4: false} {
		o := Options{Protocol: protocol.DefaultE2E(), NoRoofline: true}
		o.Protocol.RepsPerRound = reps
		got, err := json.Marshal(o.recordedProtocol())
		if err != nil {
			t.Fatal(err)
		}
		if same && string(got) != string(before) {
			t.Errorf("reps %d recorded as %s, want %s", reps, got, before)
		}
		if !same && !strings.Contains(string(got), `"reps_per_round":4`) {
			t.Errorf("reps %d recorded as %s", reps, got)
		}
	}
}

// TestRecordedProtocolRoundProbe: the per-round probe is recorded when the
// probe runs and the decode test is at depth 0 on the CPU, not otherwise.
func TestRecordedProtocolRoundProbe(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*Options)
		probe bool
	}{
		{"default", func(*Options) {}, true},
		{"no roofline", func(o *Options) { o.NoRoofline = true }, false},
		{"prefill only", func(o *Options) { o.Protocol.GenTokens = 0 }, false},
		{"depth", func(o *Options) { o.Protocol.Depth = 4096 }, false},
		{"gpu", func(o *Options) { o.Device = "cuda" }, false},
	} {
		o := Options{Protocol: protocol.DefaultE2E()}
		c.edit(&o)
		if got := o.recordedProtocol().RoundProbe; got != c.probe {
			t.Errorf("%s: round probe %v, want %v", c.name, got, c.probe)
		}
	}
}

// TestInterleavedRoundsAfterRound: the per-round hook runs once a round,
// after that round's processes and before the next round's.
func TestInterleavedRoundsAfterRound(t *testing.T) {
	p := protocol.E2E{GenTokens: 4, Runs: 3, Threads: 1}
	var dSpecs, lSpecs []benchSpec
	var order []string
	d := fakeContender("damascus", 200, &dSpecs, &order)
	l := fakeContender("llama.cpp", 100, &lSpecs, &order)
	if err := interleavedRounds([]*contender{d, l}, p, io.Discard, func() { order = append(order, "probe") }); err != nil {
		t.Fatal(err)
	}
	want := []string{"damascus", "llama.cpp", "probe", "llama.cpp", "damascus", "probe", "damascus", "llama.cpp", "probe"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

// TestRoundNote: sample j is set against the mean of the probes either
// side of its round (j / reps); a round whose probes differ by more than
// protocol.RoundProbeDrift, or one of whose probes was skipped, is left
// out (the former counted); no probes, no note.
func TestRoundNote(t *testing.T) {
	const bytes = 1e9 // one GB a token: tok/s is GB/s
	rounds := []roofline.Measurement{
		{PerSecond: 38e9}, // before round 0
		{PerSecond: 42e9}, // after round 0, before round 1
		{PerSecond: 60e9}, // after round 1 (moved: 60/42 > 1.15), before round 2
		{PerSecond: 60e9}, // after round 2, before round 3
		{Skipped: "no AVX-512"},
	}
	// Two samples a round: 36, 44 | 99, 99 (moved) | 54, 60 | 7, 7 (skipped probe).
	got := roundNote([]float64{36, 44, 99, 99, 54, 60, 7, 7}, 2, bytes, rounds)
	want := "against the probes either side of each round (huge pages, 4 probes: median 51.0 GB/s, 38.0–60.0): 95%, 90–110% over 4 samples (1 rounds left out: their probes differ by more than 15%)"
	if got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
	if got := roundNote([]float64{36, 40}, 1, bytes, nil); got != "" {
		t.Errorf("without probes: %q", got)
	}
	// More samples than probed rounds (a run cut short): the extra ones
	// are left out, not set against another round's probes.
	if got := roundNote([]float64{30, 10}, 1, bytes, rounds[:2]); !strings.Contains(got, "75%, 75–75% over 1 samples") {
		t.Errorf("extra samples: %q", got)
	}
}

// TestComputeNote: a prefill rate as int8 work through the layers' weights
// and its fraction of each int8 peak probed; skipped probes and the other
// probes say nothing; unknown layer weights, no note.
func TestComputeNote(t *testing.T) {
	r := roofline.Report{Measurements: []roofline.Measurement{
		{Probe: roofline.ProbeMemRead, PerSecond: 30e9},
		{Probe: roofline.ProbeInt8VNNI, PerSecond: 1e12},
		{Probe: roofline.ProbeAMXInt8, Skipped: "unavailable"},
	}}
	// 100 tok/s × 2 × 2.5 G = 0.5 T op/s: half the VNNI probe.
	got := computeNote(100, 2.5e9, r)
	want := "weight products ≈ 0.5 T int8 op/s (2 × 2.5 G multiply-adds a token), 50.0% of the 1.00 TOPS int8-vnni probe"
	if got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
	r.Measurements[2] = roofline.Measurement{Probe: roofline.ProbeAMXInt8, PerSecond: 10e12}
	if got := computeNote(100, 2.5e9, r); !strings.HasSuffix(got, ", 50.0% of the 1.00 TOPS int8-vnni probe, 5.0% of the 10.00 TOPS amx-int8 probe") {
		t.Errorf("with AMX: %s", got)
	}
	if got := computeNote(100, 0, r); got != "" {
		t.Errorf("no layer weights: %q", got)
	}
}

// TestBandwidthNoteMemoryOnly: the decode note sets the weight stream
// against the memory probes alone, though the report holds the int8 peaks
// of a run with a prefill test too (an e2e of pp and tg once read "4% of
// 933.2 GB/s ( pages)" from the VNNI probe).
func TestBandwidthNoteMemoryOnly(t *testing.T) {
	r := roofline.Report{Measurements: []roofline.Measurement{
		{Probe: roofline.ProbeMemRead, Pages: "4k", PerSecond: 40e9},
		{Probe: roofline.ProbeMemRead, Pages: "huge", PerSecond: 50e9},
		{Probe: roofline.ProbeInt8VNNI, PerSecond: 0.93e12},
		{Probe: roofline.ProbeAMXInt8, PerSecond: 13e12},
	}}
	got := bandwidthNote(20, 1e9, r)
	if want := "≈ 20.0 GB/s of weights, 50% of 40.0 GB/s (4k pages), 40% of 50.0 GB/s (huge pages)"; got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
}
