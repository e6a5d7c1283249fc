package e2e

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/harness/roofline"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// engineRecords describe each contender for the run record, and the
// llama.cpp build they ran.
func engineRecords(o Options, cs []*contender) ([]protocol.Engine, *protocol.LlamaCpp) {
	var engines []protocol.Engine
	var variants, libDir []string
	var bench *protocol.LlamaBench
	for _, c := range cs {
		e := protocol.Engine{Name: c.name, WeightsOnHugePages: c.s.huge, Kernels: c.s.kernels, Notes: c.notes,
			Device: c.s.device, DeviceInfo: c.s.deviceInfo}
		switch {
		case !c.llama:
			e.KVCache = cmp.Or(strings.ToLower(o.KVType), "f32")
			e.Notes = strings.Join(c.s.placement, "; ")
		case c.external:
			e.KVCache = cmp.Or(o.LlamaKV(), "f16")
			if lb := c.s.llamaBench; lb != nil {
				bench = lb
				e.KVCache = cmp.Or(kvOf(lb), e.KVCache) // what it reports it ran
			}
			libDir = append(libDir, c.s.libDir)
		default:
			e.KVCache = cmp.Or(o.LlamaKV(), "f16")
			variants = append(variants, c.s.variant)
			libDir = append(libDir, c.s.libDir)
		}
		engines = append(engines, e)
	}
	if bench != nil {
		// The build is the binary's own account; the pin is not checked.
		return engines, &protocol.LlamaCpp{Revision: bench.BuildCommit, Package: "external llama-bench", LibDir: libDir[0], Bench: bench}
	}
	return engines, &protocol.LlamaCpp{Revision: protocol.LlamaCppRevision, Package: protocol.LlamaCppPackage,
		CPUVariant: strings.Join(variants, ", "), LibDir: libDir[0]}
}

// kvOf names llama-bench's cache types: one name when K and V agree.
func kvOf(lb *protocol.LlamaBench) string {
	if lb.TypeK == lb.TypeV {
		return lb.TypeK
	}
	return "k " + lb.TypeK + ", v " + lb.TypeV
}

// A test is one row of the comparison and how to read it from the samples.
type test struct {
	name, unit, notes string
	lower             bool // lower is better
	samples           func(*engineSamples) []float64
}

func tests(p protocol.E2E) []test {
	return []test{
		{p.PromptTest(), "tok/s", "", false, func(s *engineSamples) []float64 { return s.tests[p.PromptTest()] }},
		{p.GenTest(), "tok/s", "", false, func(s *engineSamples) []float64 { return s.tests[p.GenTest()] }},
		{"cold-start", "s", "fresh process, model evicted from the page cache, one token", true, func(s *engineSamples) []float64 { return s.cold }},
		{"peak-rss", "B", "VmHWM of each bench process", true, func(s *engineSamples) []float64 { return s.rss }},
		{"sustained", "tok/s", "", false, func(s *engineSamples) []float64 { return s.sustain }},
	}
}

// records returns the run record and, per test, one e2e record per
// contender; with several llama.cpp configurations (cs[1:]), also a
// "llama.cpp" record that is the best of them.
func records(run *record.Run, cs []*contender) *record.Batch {
	b := record.NewBatch(time.Now())
	b.Add(record.Record{Kind: record.KindRun, Run: run})
	p := *run.Protocol.E2E
	for _, tt := range tests(p) {
		for _, c := range cs {
			notes := tt.notes
			if tt.name == "peak-rss" && c.rssNote != "" {
				notes = c.rssNote
			}
			addE2E(b, run, c.name, tt, tt.samples(c.s), notes)
		}
		// With several llama.cpp configurations, "llama.cpp" is the best of
		// them at each test: the rival at its strongest.
		if llamas := cs[1:]; len(llamas) > 1 {
			if best := bestOf(llamas, tt); best != nil {
				addE2E(b, run, "llama.cpp", tt, tt.samples(best.s), strings.TrimPrefix(tt.notes+"; ", "; ")+"best of "+strconv.Itoa(len(llamas))+" configurations: "+best.name)
			}
		}
	}
	return b
}

// bestOf returns the contender with the best median at tt (the first of
// equals), nil when none has samples.
func bestOf(cs []*contender, tt test) *contender {
	var best *contender
	for _, c := range cs {
		m := stats.Summarize(tt.samples(c.s)).Median
		if len(tt.samples(c.s)) == 0 {
			continue
		}
		if bm := 0.0; best != nil {
			bm = stats.Summarize(tt.samples(best.s)).Median
			if (tt.lower && m >= bm) || (!tt.lower && m <= bm) {
				continue
			}
		}
		best = c
	}
	return best
}

// addE2E adds engine's record of test tt to b; none without samples.
func addE2E(b *record.Batch, run *record.Run, engine string, tt test, samples []float64, notes string) {
	if len(samples) == 0 {
		return
	}
	p := run.Protocol.E2E
	r := &record.E2E{Engine: engine, Test: tt.name, Unit: tt.unit, Samples: samples, Summary: stats.Summarize(samples), Notes: notes}
	// At a depth a decode step streams the KV cache too, in each engine's
	// cache type: the weights alone no longer say the traffic.
	if tt.name == p.GenTest() && p.Depth == 0 {
		switch {
		case run.Roofline != nil:
			r.Notes = joinNote(r.Notes, bandwidthNote(r.Summary.Median, run.Protocol.Model.TensorBytes, *run.Roofline))
			r.Notes = joinNote(r.Notes, roundNote(samples, p.Reps(), run.Protocol.Model.TensorBytes, run.Roofline.Rounds))
		case p.NominalGBps > 0:
			r.Notes = joinNote(r.Notes, nominalNote(r.Summary.Median, run.Protocol.Model.TensorBytes, p.NominalGBps))
		}
	}
	if tt.name == p.PromptTest() && run.Roofline != nil {
		r.Notes = joinNote(r.Notes, computeNote(r.Summary.Median, run.Protocol.Model.LayerWeights, *run.Roofline))
	}
	if tt.name == "sustained" {
		r.FirstWindow, r.LastWindow = samples[0], samples[len(samples)-1]
		r.Notes = strings.TrimPrefix(notes+"; ", "; ") + fmt.Sprintf("%d windows; first %.2f, last %.2f tok/s", len(samples), r.FirstWindow, r.LastWindow)
	}
	b.Add(record.Record{Kind: record.KindE2E, E2E: r})
}

// bandwidthNote states the weight stream a decode rate implies and its
// fraction of the probed bandwidth (4 KiB and huge pages).
func bandwidthNote(tokPerSec float64, weightBytes int64, r roofline.Report) string {
	gbps := tokPerSec * float64(weightBytes) / 1e9
	note := fmt.Sprintf("≈ %.1f GB/s of weights", gbps)
	for _, m := range r.Measurements {
		// Only the memory probes: the report also holds the int8 peaks
		// when the run has a prefill test (computeNote's).
		if m.Probe == roofline.ProbeMemRead && m.Skipped == "" && m.PerSecond > 0 {
			note += fmt.Sprintf(", %.0f%% of %.1f GB/s (%s pages)", 100*gbps*1e9/m.PerSecond, m.PerSecond/1e9, m.Pages)
		}
	}
	return note
}

// computeNote states the int8 work a prefill rate implies through the
// layers' weight matrices (2 × layerWeights operations a token) and its
// fraction of each int8 peak the run probed (VNNI, AMX); "" when the
// model's layer weights are unknown.
func computeNote(tokPerSec float64, layerWeights int64, r roofline.Report) string {
	if layerWeights <= 0 {
		return ""
	}
	ops := tokPerSec * 2 * float64(layerWeights)
	note := fmt.Sprintf("weight products ≈ %.3g T int8 op/s (2 × %.3g G multiply-adds a token)", ops/1e12, float64(layerWeights)/1e9)
	for _, m := range r.Measurements {
		if (m.Probe == roofline.ProbeInt8VNNI || m.Probe == roofline.ProbeAMXInt8) && m.Skipped == "" && m.PerSecond > 0 {
			note += fmt.Sprintf(", %.1f%% of the %.2f TOPS %s probe", 100*ops/m.PerSecond, m.PerSecond/1e12, m.Probe)
		}
	}
	return note
}

// roundNote states each decode sample's weight stream as a fraction of the
// probes on either side of its round (sample j is from round j / reps,
// between rounds[r] and rounds[r+1]; their mean): median and range over
// the samples, beside the probes. A round whose two probes differ by more
// than protocol.RoundProbeDrift is left out and counted. "" without probes.
func roundNote(samples []float64, reps int, weightBytes int64, rounds []roofline.Measurement) string {
	var fracs, probes []float64
	for _, m := range rounds {
		if m.Skipped == "" && m.PerSecond > 0 {
			probes = append(probes, m.PerSecond/1e9)
		}
	}
	moved := map[int]bool{}
	for j, tps := range samples {
		r := j / max(reps, 1)
		if r+1 >= len(rounds) {
			continue
		}
		a, b := rounds[r], rounds[r+1]
		if a.Skipped != "" || b.Skipped != "" || a.PerSecond <= 0 || b.PerSecond <= 0 {
			continue
		}
		if max(a.PerSecond, b.PerSecond) > protocol.RoundProbeDrift*min(a.PerSecond, b.PerSecond) {
			moved[r] = true
			continue
		}
		fracs = append(fracs, 100*tps*float64(weightBytes)/((a.PerSecond+b.PerSecond)/2))
	}
	if len(fracs) == 0 && len(moved) == 0 {
		return ""
	}
	g := stats.Summarize(probes)
	note := fmt.Sprintf("against the probes either side of each round (huge pages, %d probes: median %.1f GB/s, %.1f–%.1f)", len(probes), g.Median, g.Min, g.Max)
	if len(fracs) > 0 {
		f := stats.Summarize(fracs)
		note += fmt.Sprintf(": %.0f%%, %.0f–%.0f%% over %d samples", f.Median, f.Min, f.Max, len(fracs))
	}
	if len(moved) > 0 {
		note += fmt.Sprintf(" (%d rounds left out: their probes differ by more than %.0f%%)", len(moved), 100*(protocol.RoundProbeDrift-1))
	}
	return note
}

// nominalNote states the weight stream a decode rate implies as a fraction
// of the device's stated bandwidth.
func nominalNote(tokPerSec float64, weightBytes int64, nominalGBps float64) string {
	gbps := tokPerSec * float64(weightBytes) / 1e9
	return fmt.Sprintf("≈ %.1f GB/s of weights, %.1f%% of the nominal %.0f GB/s", gbps, 100*gbps/nominalGBps, nominalGBps)
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
